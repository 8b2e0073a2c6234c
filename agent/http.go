package agent

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net/http"
	"os"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/pprof/profile"
	"github.com/perfdoctor/perfdoctor/bundle"
)

// StatusPath serves the agent's Status as JSON: cgroup limits, the
// GOMAXPROCS check, GC tuning decisions, the watcher and captures.
const StatusPath = "/debug/perfdoctor/status"

// maxProfileSeconds bounds ?seconds= on CPU profiles, traces and deltas.
const maxProfileSeconds = 300

// handler builds the agent's own mux. The agent does not import
// net/http/pprof, whose init registers on http.DefaultServeMux and would put
// pprof on the application's listener if it serves the default mux.
func (a *Agent) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /debug/pprof/", a.pprofIndex)
	mux.HandleFunc("GET /debug/pprof/cmdline", pprofCmdline)
	mux.HandleFunc("GET /debug/pprof/profile", pprofCPU)
	mux.HandleFunc("GET /debug/pprof/symbol", pprofSymbol)
	mux.HandleFunc("POST /debug/pprof/symbol", pprofSymbol)
	mux.HandleFunc("GET /debug/pprof/trace", pprofTrace)
	mux.HandleFunc("GET "+bundle.MetricsPath, a.serveMetrics)
	mux.HandleFunc("GET "+StatusPath, a.serveStatus)
	if a.opts.Token == "" {
		return mux
	}
	want := sha256.Sum256([]byte(a.opts.Token))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		got := sha256.Sum256([]byte(tok)) // equal lengths: the compare leaks nothing
		if !ok || subtle.ConstantTimeCompare(got[:], want[:]) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="perfdoctor agent"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		mux.ServeHTTP(w, r)
	})
}

// MetricsResponse is the JSON served at bundle.MetricsPath: the
// bundle.RuntimeMetrics fields plus the agent's Status under "agent", which
// readers decoding into bundle.RuntimeMetrics simply ignore.
type MetricsResponse struct {
	bundle.RuntimeMetrics
	Agent *Status `json:"agent,omitempty"`
}

func (a *Agent) serveMetrics(w http.ResponseWriter, r *http.Request) {
	st := a.Status()
	writeJSON(w, MetricsResponse{RuntimeMetrics: *Snapshot(), Agent: &st})
}

func (a *Agent) serveStatus(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, a.Status())
}

func writeJSON(w http.ResponseWriter, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.Write(b)
}

func (a *Agent) pprofIndex(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if name := strings.TrimPrefix(r.URL.Path, "/debug/pprof/"); name != "" {
		serveProfile(w, r, name)
		return
	}
	type entry struct {
		name  string
		count int
	}
	var ents []entry
	for _, p := range pprof.Profiles() {
		ents = append(ents, entry{p.Name(), p.Count()})
	}
	for _, n := range []string{"cmdline", "profile", "symbol", "trace"} {
		ents = append(ents, entry{n, 0})
	}
	slices.SortFunc(ents, func(x, y entry) int { return strings.Compare(x.name, y.name) })
	var b bytes.Buffer
	b.WriteString("<html>\n<head><title>/debug/pprof/</title></head>\n<body>\n/debug/pprof/ (perfdoctor agent)\n<br>\n" +
		"<p>Set debug=1 as a query parameter to export in legacy text format</p>\n<table>\n<thead><td>Count</td><td>Profile</td></thead>\n")
	for _, e := range ents {
		fmt.Fprintf(&b, "<tr><td>%d</td><td><a href='%s?debug=1'>%s</a></td></tr>\n", e.count, html.EscapeString(e.name), html.EscapeString(e.name))
	}
	b.WriteString("</table>\n<a href=\"goroutine?debug=2\">full goroutine stack dump</a>\n<br>\n" +
		"<a href=\"" + bundle.MetricsPath + "\">runtime metrics</a> <a href=\"" + StatusPath + "\">agent status</a>\n</body>\n</html>\n")
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Write(b.Bytes())
}

var deltaProfiles = map[string]bool{"allocs": true, "block": true, "goroutine": true, "heap": true, "mutex": true, "threadcreate": true}

func serveProfile(w http.ResponseWriter, r *http.Request, name string) {
	p := pprof.Lookup(name)
	if p == nil {
		http.Error(w, "unknown profile", http.StatusNotFound)
		return
	}
	debugLevel, _ := strconv.Atoi(r.FormValue("debug"))
	if sec := r.FormValue("seconds"); sec != "" {
		if debugLevel != 0 || !deltaProfiles[name] {
			http.Error(w, `"seconds" is not supported with debug or for this profile`, http.StatusBadRequest)
			return
		}
		serveDelta(w, r, p, sec)
		return
	}
	if gc, _ := strconv.Atoi(r.FormValue("gc")); name == "heap" && gc > 0 {
		runtime.GC()
	}
	if debugLevel != 0 {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	} else {
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Content-Disposition", fmt.Sprintf(`attachment; filename=%q`, name))
	}
	p.WriteTo(w, debugLevel)
}

func parseSeconds(s string, def float64) (time.Duration, error) {
	if s == "" {
		return time.Duration(def * float64(time.Second)), nil
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || v <= 0 || v > maxProfileSeconds {
		return 0, fmt.Errorf(`invalid "seconds" %q: want (0, %d]`, s, maxProfileSeconds)
	}
	return time.Duration(v * float64(time.Second)), nil
}

// sleepCtx waits d or until the request is cancelled.
func sleepCtx(r *http.Request, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.Context().Done():
		return false
	}
}

func serveDelta(w http.ResponseWriter, r *http.Request, p *pprof.Profile, sec string) {
	d, err := parseSeconds(sec, 0)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	read := func() (*profile.Profile, error) {
		var buf bytes.Buffer
		if err := p.WriteTo(&buf, 0); err != nil {
			return nil, err
		}
		pp, err := profile.Parse(&buf)
		if err == nil {
			pp.TimeNanos = time.Now().UnixNano()
		}
		return pp, err
	}
	p0, err := read()
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	if !sleepCtx(r, d) {
		return
	}
	p1, err := read()
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	ts, dur := p1.TimeNanos, p1.TimeNanos-p0.TimeNanos
	p0.Scale(-1)
	out, err := profile.Merge([]*profile.Profile{p0, p1})
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	out.TimeNanos, out.DurationNanos = ts, dur
	w.Header().Set("Content-Type", "application/octet-stream")
	out.Write(w)
}

func pprofCPU(w http.ResponseWriter, r *http.Request) {
	d, err := parseSeconds(r.FormValue("seconds"), 30)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var buf bytes.Buffer
	if err := pprof.StartCPUProfile(&buf); err != nil {
		http.Error(w, "could not enable CPU profiling: "+err.Error(), http.StatusInternalServerError)
		return
	}
	sleepCtx(r, d)
	pprof.StopCPUProfile()
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Disposition", `attachment; filename="profile"`)
	w.Write(buf.Bytes())
}

func pprofTrace(w http.ResponseWriter, r *http.Request) {
	d, err := parseSeconds(r.FormValue("seconds"), 1)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var buf bytes.Buffer
	if err := trace.Start(&buf); err != nil {
		http.Error(w, "could not enable tracing: "+err.Error(), http.StatusInternalServerError)
		return
	}
	sleepCtx(r, d)
	trace.Stop()
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Disposition", `attachment; filename="trace"`)
	w.Write(buf.Bytes())
}

func pprofCmdline(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	io.WriteString(w, strings.Join(os.Args, "\x00"))
}

// pprofSymbol maps program counters ("0x1+0x2", query or POST body) to
// function names, as net/http/pprof's Symbol does.
func pprofSymbol(w http.ResponseWriter, r *http.Request) {
	var src io.Reader = strings.NewReader(r.URL.RawQuery)
	if r.Method == http.MethodPost {
		src = io.LimitReader(r.Body, 1<<20)
	}
	var buf bytes.Buffer
	buf.WriteString("num_symbols: 1\n")
	br := bufio.NewReader(src)
	for {
		word, err := br.ReadString('+')
		word = strings.TrimSuffix(word, "+")
		if pc, _ := strconv.ParseUint(word, 0, 64); pc != 0 {
			if f := runtime.FuncForPC(uintptr(pc)); f != nil {
				fmt.Fprintf(&buf, "%#x %s\n", pc, f.Name())
			}
		}
		if err != nil {
			break
		}
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Write(buf.Bytes())
}
