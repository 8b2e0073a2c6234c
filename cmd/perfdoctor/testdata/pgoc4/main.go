// Command pgoc4 serves casebook C4's bad variant alone. The PGO test builds
// it with the profile perfdoctor wrote from the casebook binary: a PGO build
// recompiles every package the program imports, and this one imports far
// fewer than the casebook command (no Kafka, Thrift or database clients),
// while the hot functions the profile names are the same.
package main

import (
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"

	"github.com/perfdoctor/perfdoctor/casebook/c4strfmt"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "listen address")
	flag.Parse()
	h, err := c4strfmt.NewHandler("bad")
	if err != nil {
		fmt.Fprintln(os.Stderr, "pgoc4:", err)
		os.Exit(1)
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintln(os.Stderr, "pgoc4:", err)
		os.Exit(1)
	}
	fmt.Printf("ready app=http://%s\n", ln.Addr())
	if err := http.Serve(ln, h); err != nil {
		fmt.Fprintln(os.Stderr, "pgoc4:", err)
		os.Exit(1)
	}
}
