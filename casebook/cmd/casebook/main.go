// Command casebook runs one variant of a casebook reproduction as a plain Go
// service with net/http/pprof on a separate listener:
//
//	casebook -case NAME -variant bad|fixed -listen 127.0.0.1:0 -pprof 127.0.0.1:0
//
// Once both listeners are up it prints exactly one line to stdout,
//
//	ready app=http://127.0.0.1:PORT pprof=http://127.0.0.1:PORT
//
// and serves until SIGINT or SIGTERM.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/perfdoctor/perfdoctor/casebook/serve"
)

func main() {
	caseName := flag.String("case", "", "case to run: one of "+strings.Join(serve.Cases(), ", "))
	variant := flag.String("variant", "bad", "variant: bad or fixed")
	listen := flag.String("listen", serve.DefaultAddr, "app listen address")
	pprofAddr := flag.String("pprof", serve.DefaultAddr, "pprof listen address (keep it on loopback)")
	downstream := flag.String("downstream", "", "d2, c3, r2: the downstream (r2: upstream resolver) host:port (default: a built-in one)")
	flag.Parse()
	if *caseName == "" || flag.NArg() > 0 {
		flag.Usage()
		os.Exit(2)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	svc, err := serve.Start(ctx, *caseName, *variant, *listen, *pprofAddr, serve.WithDownstream(*downstream), serve.WithReexec())
	if err != nil {
		fmt.Fprintln(os.Stderr, "casebook:", err)
		os.Exit(1)
	}
	fmt.Println(svc.ReadyLine())
	if err := svc.Wait(); err != nil {
		fmt.Fprintln(os.Stderr, "casebook:", err)
		os.Exit(1)
	}
}
