// Command gatedemo is a small HTTP service for measuring perfdoctor gate: every
// request does a fixed amount of CPU work, and a build made with
//
//	go build -ldflags '-X main.extraPercent=5' ./internal/gatedemo
//
// does that much more work per request: the planted regression of
// docs/ci.md and of gate's end-to-end tests. /debug/pprof/ is served on
// the same address, so the gate can profile both builds.
package main

import (
	"flag"
	"fmt"
	"log"
	"net/http"
	_ "net/http/pprof"
	"strconv"
)

// extraPercent is set at build time (-ldflags -X) to plant a regression.
var extraPercent = "0"

// baseWork is the iterations of a request's work: about 0.2 ms of CPU.
const baseWork = 200_000

func main() {
	listen := flag.String("listen", "127.0.0.1:8080", "address to serve on")
	extra := flag.Float64("extra-percent", parsePercent(extraPercent), "percent more work per request than the base build")
	flag.Parse()
	work := int(baseWork * (1 + *extra/100))
	http.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "%d\n", checksum(work))
	})
	log.Fatal(http.ListenAndServe(*listen, nil))
}

// checksum is the request's work: a mixing loop the compiler cannot drop,
// since its result is the response.
func checksum(n int) uint64 {
	h := uint64(14695981039346656037)
	for i := range n {
		h ^= uint64(i)
		h *= 1099511628211
		h ^= h >> 29
	}
	return h
}

func parsePercent(s string) float64 {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		log.Fatalf("extraPercent %q is not a number", s)
	}
	return v
}
