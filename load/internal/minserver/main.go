// Command minserver is the minimal loopback HTTP server the load generator is
// measured against (scripts/loadbench.sh): it answers every request with a
// 2-byte body, so the client's cost per request is what the benchmark sees.
package main

import (
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"runtime"
)

func main() {
	addr := flag.String("listen", "127.0.0.1:0", "listen address (loopback)")
	procs := flag.Int("procs", 0, "GOMAXPROCS (0 = default)")
	flag.Parse()
	if *procs > 0 {
		runtime.GOMAXPROCS(*procs)
	}
	l, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Fprintf(os.Stdout, "ready app=http://%s/\n", l.Addr())
	body := []byte("ok")
	log.Fatal(http.Serve(l, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Write(body)
	})))
}
