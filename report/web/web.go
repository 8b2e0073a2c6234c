// Package web serves a diagnosis on a local web server, for `perfdoctor
// view`: the HTML report at / and, for each profile, pprof's own web UI
// (graph, flame graph, top, source, peek, disassembly) under /pprof/<kind>/.
// It answers only loopback host names unless told to serve other machines.
package web

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os/exec"
	"sort"
	"strings"
	"time"

	"github.com/google/pprof/driver"
	"github.com/google/pprof/profile"

	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/report"
)

// CheckListenAddr refuses a non-loopback address unless allowed, and
// reports whether the address is loopback.
func CheckListenAddr(addr string, allowRemote bool) (loopback bool, err error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false, fmt.Errorf("--http %q: want host:port, e.g. 127.0.0.1:8080", addr)
	}
	loopback = isLoopbackHost(host)
	if !loopback && !allowRemote {
		what := host
		if what == "" {
			what = "every interface"
		}
		return false, fmt.Errorf("--http %s listens on %s, not loopback: add --allow-remote to serve other machines (they could read the profiles)", addr, what)
	}
	return loopback, nil
}

func isLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Serve serves h on ln until ctx ends, then shuts down gracefully.
func Serve(ctx context.Context, ln net.Listener, h http.Handler, stdout io.Writer, rep *report.Report) error {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	url := "http://" + ln.Addr().String() + "/"
	fmt.Fprintf(stdout, "perfdoctor: serving the report of %s at %s\n", strings.Join(rep.Inputs.Sources, ", "), url)
	for _, k := range viewKinds(rep) {
		fmt.Fprintf(stdout, "  pprof %-10s %spprof/%s/\n", k, url, k)
	}
	if _, err := exec.LookPath("dot"); err != nil && len(viewKinds(rep)) > 0 {
		fmt.Fprintln(stdout, "  (pprof's graph view needs Graphviz's dot, not found: apt-get install graphviz; the other views work without it)")
	}
	fmt.Fprintln(stdout, "Press Ctrl-C to stop.")
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return fmt.Errorf("view: %w", err)
	case <-ctx.Done():
	}
	shutCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	srv.Shutdown(shutCtx)
	<-done
	return nil
}

// viewKinds lists the profile kinds served, in a stable order.
func viewKinds(rep *report.Report) []string {
	if rep.Evidence == nil {
		return nil
	}
	var ks []string
	for k := range rep.Evidence.Profiles {
		ks = append(ks, string(k))
	}
	sort.Strings(ks)
	return ks
}

// NewHandler builds the site: the HTML report at /, and pprof's own
// web UI for each profile under /pprof/<kind>/.
func NewHandler(rep *report.Report, log *slog.Logger, loopbackOnly bool) (http.Handler, error) {
	mux := http.NewServeMux()
	links := map[string]string{}
	kinds := viewKinds(rep)
	for _, k := range kinds {
		hs, err := pprofHandlers(rep.Evidence.Profile(evidence.Kind(k)), log)
		if err != nil {
			return nil, fmt.Errorf("pprof web UI for the %s profile: %w", k, err)
		}
		prefix := "/pprof/" + k
		mux.Handle(prefix+"/", http.StripPrefix(prefix, hs))
		links[k] = prefix + "/"
	}
	var page bytes.Buffer
	if err := report.WriteHTMLWith(&page, rep, report.HTMLOptions{PprofLinks: links}); err != nil {
		return nil, err
	}
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write(page.Bytes())
	})
	mux.HandleFunc("GET /pprof/{$}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, "<!DOCTYPE html><title>pprof</title><h1>pprof web UI</h1><ul>")
		for _, k := range kinds {
			fmt.Fprintf(w, `<li><a href="%s/">%s</a></li>`, k, k)
		}
		fmt.Fprint(w, `</ul><p><a href="/">the perfdoctor report</a></p>`)
	})
	var h http.Handler = mux
	if loopbackOnly {
		h = loopbackHostOnly(mux)
	}
	return h, nil
}

// loopbackHostOnly refuses requests whose Host is not a loopback name, so
// a web page elsewhere cannot reach the server by rebinding its DNS name
// to 127.0.0.1.
func loopbackHostOnly(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host := r.Host
		if h, _, err := net.SplitHostPort(host); err == nil {
			host = h
		}
		if !isLoopbackHost(strings.Trim(host, "[]")) {
			http.Error(w, "perfdoctor view answers only loopback host names", http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// pprofHandlers runs pprof's driver on an in-memory profile and captures
// the handlers of its web UI instead of letting it start a server.
func pprofHandlers(p *profile.Profile, log *slog.Logger) (http.Handler, error) {
	var handlers map[string]http.Handler
	err := driver.PProf(&driver.Options{
		// -symbolize=none: Go profiles carry their symbols; nothing is fetched.
		Flagset: &pprofFlags{args: []string{"-http=127.0.0.1:0", "-no_browser", "-symbolize=none", "perfdoctor"}},
		Fetch:   memFetcher{p},
		UI:      pprofUI{log},
		HTTPServer: func(args *driver.HTTPServerArgs) error {
			handlers = args.Handlers
			return nil
		},
	})
	if err != nil {
		return nil, err
	}
	if handlers == nil {
		return nil, errors.New("pprof did not start its web UI")
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		path := r.URL.Path
		if path == "" {
			path = "/"
		}
		h, ok := handlers[path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		h.ServeHTTP(w, r)
	}), nil
}

// memFetcher hands pprof a copy of a profile already in memory. It
// returns no source URL, so pprof neither fetches nor saves anything.
type memFetcher struct{ p *profile.Profile }

func (f memFetcher) Fetch(string, time.Duration, time.Duration) (*profile.Profile, string, error) {
	return f.p.Copy(), "", nil
}

// pprofFlags gives pprof's driver a fixed command line.
type pprofFlags struct {
	fs    *flag.FlagSet
	args  []string
	extra []string
}

func (f *pprofFlags) set() *flag.FlagSet {
	if f.fs == nil {
		f.fs = flag.NewFlagSet("pprof", flag.ContinueOnError)
		f.fs.SetOutput(io.Discard)
	}
	return f.fs
}

func (f *pprofFlags) Bool(name string, def bool, usage string) *bool {
	return f.set().Bool(name, def, usage)
}
func (f *pprofFlags) Int(name string, def int, usage string) *int {
	return f.set().Int(name, def, usage)
}
func (f *pprofFlags) Float64(name string, def float64, usage string) *float64 {
	return f.set().Float64(name, def, usage)
}
func (f *pprofFlags) String(name, def, usage string) *string {
	return f.set().String(name, def, usage)
}
func (f *pprofFlags) StringList(name, def, usage string) *[]*string {
	return &[]*string{f.set().String(name, def, usage)}
}
func (f *pprofFlags) ExtraUsage() string     { return strings.Join(f.extra, "\n") }
func (f *pprofFlags) AddExtraUsage(s string) { f.extra = append(f.extra, s) }
func (f *pprofFlags) Parse(usage func()) []string {
	if err := f.set().Parse(f.args); err != nil {
		usage()
		return nil
	}
	return f.set().Args()
}

// pprofUI sends pprof's messages to the debug log.
type pprofUI struct{ log *slog.Logger }

func (u pprofUI) ReadLine(string) (string, error)     { return "", io.EOF }
func (u pprofUI) Print(args ...any)                   { u.logf(slog.LevelDebug, args...) }
func (u pprofUI) PrintErr(args ...any)                { u.logf(slog.LevelInfo, args...) }
func (u pprofUI) IsTerminal() bool                    { return false }
func (u pprofUI) WantBrowser() bool                   { return false }
func (u pprofUI) SetAutoComplete(func(string) string) {}

func (u pprofUI) logf(level slog.Level, args ...any) {
	if u.log != nil {
		u.log.Log(context.Background(), level, "pprof: "+strings.TrimSpace(fmt.Sprint(args...)))
	}
}
