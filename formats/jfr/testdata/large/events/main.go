// Command events prints the event types the JFR reader decodes, comma
// separated, as jfr print --events takes them (compare.sh).
package main

import (
	"fmt"
	"strings"

	"github.com/perfdoctor/perfdoctor/formats/jfr"
)

func main() {
	fmt.Println(strings.Join(append(jfr.Events, "profiler.WallClockSample"), ","))
}
