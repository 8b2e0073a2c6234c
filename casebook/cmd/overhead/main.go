// Command overhead measures what perfdoctor costs a service it watches (see
// package overhead): a casebook variant runs as its own process under a
// closed-loop load while, in rotating rounds, nothing runs beside it,
// `perfdoctor collect` runs against it (with and without the execution
// trace), its CPU profile or execution trace endpoint runs for the whole
// measurement, or the agent is armed inside it (with and without the flight
// recorder). From the module root:
//
//	go run ./casebook/cmd/overhead                      # control and b1/fixed, ~10 minutes
//	go run ./casebook/cmd/overhead -services control/bad -d 31s -rounds 6 -modes collect
//
// It prints one Markdown table per service (docs/overhead.md quotes them).
// With -serve it is instead the service: the variant plus a control
// listener that arms and disarms the agent (POST /agent/on?flight=0|1,
// /agent/off).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/perfdoctor/perfdoctor/agent"
	"github.com/perfdoctor/perfdoctor/casebook/overhead"
	"github.com/perfdoctor/perfdoctor/casebook/serve"
	"github.com/perfdoctor/perfdoctor/internal/supervise"
	"github.com/perfdoctor/perfdoctor/load"
)

func main() {
	var (
		serveCase = flag.String("serve", "", "run as the service: CASE/VARIANT (used by the measurement itself)")
		services  = flag.String("services", "control/bad,b1/fixed", "comma-separated CASE/VARIANT services to measure")
		rounds    = flag.Int("rounds", 4, "rounds; each measures every mode once, in rotating order")
		dur       = flag.Duration("d", 10*time.Second, "length of each measurement (collect's window is 1s shorter, so its start and end work fall inside)")
		warmup    = flag.Duration("warmup", 500*time.Millisecond, "load before each measurement, not counted")
		conc      = flag.Int("c", 8, "closed-loop connections")
		trace     = flag.Duration("trace", time.Second, "collect's execution trace length in the collect mode")
		modes     = flag.String("modes", strings.Join(modeNames, ","), "comma-separated modes to compare with the baseline")
	)
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	if *serveCase != "" {
		err = serveWithAgent(ctx, *serveCase)
	} else {
		err = measureAll(ctx, strings.Split(*services, ","), settings{*rounds, *dur, *warmup, *trace, *conc, strings.Split(*modes, ",")})
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "overhead:", err)
		os.Exit(1)
	}
}

// modeNames are the modes -modes selects from, besides the baseline.
var modeNames = []string{"collect", "collect-notrace", "profile", "trace", "agent", "agent-noflight"}

// settings are the measurement's flags.
type settings struct {
	rounds           int
	d, warmup, trace time.Duration
	conc             int
	modes            []string
}

func measureAll(ctx context.Context, services []string, set settings) error {
	if set.d < 3*time.Second || set.d%time.Second != 0 {
		return fmt.Errorf("-d %s: whole seconds, at least 3s (collect's window is 1s shorter and at least 2s)", set.d)
	}
	for _, m := range set.modes {
		if !slices.Contains(modeNames, m) {
			return fmt.Errorf("-modes: unknown mode %q (%s)", m, strings.Join(modeNames, ", "))
		}
	}
	dir, err := os.MkdirTemp("", "perfdoctor-overhead")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	perfdoctor := filepath.Join(dir, "perfdoctor")
	if out, err := exec.CommandContext(ctx, "go", "build", "-o", perfdoctor, "./cmd/perfdoctor").CombinedOutput(); err != nil {
		return fmt.Errorf("go build ./cmd/perfdoctor (run from the module root): %w\n%s", err, out)
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	for _, svc := range services {
		fmt.Fprintf(os.Stderr, "measuring %s\n", svc)
		if err := measureOne(ctx, self, perfdoctor, dir, svc, set); err != nil {
			return fmt.Errorf("%s: %w", svc, err)
		}
	}
	return nil
}

func measureOne(ctx context.Context, self, perfdoctor, dir, svc string, set settings) error {
	d := set.d
	cmd := exec.Command(self, "-serve", svc)
	p, line, err := supervise.StartLine(ctx, cmd, "ready ", 30*time.Second)
	if err != nil {
		return err
	}
	defer p.Stop()
	addr := map[string]string{}
	for _, f := range strings.Fields(line) {
		k, v, _ := strings.Cut(f, "=")
		addr[k] = v
	}
	if addr["app"] == "" || addr["udp"] != "" {
		return fmt.Errorf("needs an HTTP case: %q", line)
	}
	window := d - time.Second
	bundle := filepath.Join(dir, "bundle")
	// collectCPU is the CPU time the collect processes used, per mode.
	collectCPU := map[string][]time.Duration{}
	collectMode := func(name string, trace time.Duration) overhead.Mode {
		return overhead.Mode{Name: name, Start: func(ctx context.Context) (func() error, error) {
			c := exec.CommandContext(ctx, perfdoctor, "collect", addr["pprof"], "-d", window.String(), "--trace", trace.String(), "-o", bundle)
			var out strings.Builder
			c.Stdout, c.Stderr = &out, &out
			if err := c.Start(); err != nil {
				return nil, err
			}
			return func() error {
				err := c.Wait()
				os.RemoveAll(bundle)
				if err != nil {
					return fmt.Errorf("perfdoctor collect: %w: %s", err, strings.TrimSpace(out.String()))
				}
				collectCPU[name] = append(collectCPU[name], c.ProcessState.UserTime()+c.ProcessState.SystemTime())
				return nil
			}, nil
		}}
	}
	// endpointMode runs one pprof endpoint for the whole measurement, so
	// its cost per second stands out from the machine's noise.
	endpointMode := func(name, endpoint string) overhead.Mode {
		return overhead.Mode{Name: name, Start: func(ctx context.Context) (func() error, error) {
			done := make(chan error, 1)
			go func() {
				done <- call(ctx, http.MethodGet, fmt.Sprintf("%s/debug/pprof/%s?seconds=%d", addr["pprof"], endpoint, int(d.Seconds())), http.StatusOK)
			}()
			return func() error { return <-done }, nil
		}}
	}
	agentMode := func(name, flight string) overhead.Mode {
		return overhead.Mode{Name: name, Start: func(ctx context.Context) (func() error, error) {
			if err := call(ctx, http.MethodPost, addr["control"]+"/agent/on?flight="+flight, http.StatusNoContent); err != nil {
				return nil, err
			}
			return func() error { return call(ctx, http.MethodPost, addr["control"]+"/agent/off", http.StatusNoContent) }, nil
		}}
	}
	all := map[string]overhead.Mode{
		"collect":         collectMode(fmt.Sprintf("`perfdoctor collect -d %s` (trace %s)", window, set.trace), set.trace),
		"collect-notrace": collectMode(fmt.Sprintf("`perfdoctor collect -d %s --trace 0`", window), 0),
		"profile":         endpointMode("CPU profile all the time", "profile"),
		"trace":           endpointMode("execution trace all the time", "trace"),
		"agent":           agentMode("agent armed with `FlightRecorder`", "1"),
		"agent-noflight":  agentMode("agent armed (no flight recorder, the default)", "0"),
	}
	modes := []overhead.Mode{{Name: "nothing (baseline)"}}
	for _, m := range set.modes {
		modes = append(modes, all[m])
	}
	res, err := overhead.Run(ctx, overhead.Options{
		Load:   load.Config{URL: addr["app"], Concurrency: set.conc},
		PID:    p.PID(),
		Modes:  modes,
		Rounds: set.rounds, Duration: d, Warmup: set.warmup,
		OnRound: func(done, of int) { fmt.Fprintf(os.Stderr, "  round %d/%d\n", done, of) },
	})
	if err != nil {
		return err
	}
	fmt.Println(res.Table(fmt.Sprintf("**%s**, %d connections, %s per measurement", svc, set.conc, d)))
	for _, m := range res.Modes {
		if runs := collectCPU[m]; len(runs) > 0 {
			var sum time.Duration
			for _, c := range runs {
				sum += c
			}
			mean := sum / time.Duration(len(runs))
			fmt.Printf("The collect process itself (%s): %s of CPU per run, %.1f%% of one core over the window.\n", m, mean.Round(time.Millisecond), 100*mean.Seconds()/window.Seconds())
		}
	}
	fmt.Println()
	return nil
}

// call sends a request without a body, reads the answer to its end (as
// collect reads a profile) and checks its status.
func call(ctx context.Context, method, url string, want int) error {
	req, err := http.NewRequestWithContext(ctx, method, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return fmt.Errorf("%s %s: %w", method, url, err)
	}
	if resp.StatusCode != want {
		return fmt.Errorf("%s %s: %s", method, url, resp.Status)
	}
	return nil
}

// serveWithAgent runs the case's variant and a loopback control listener
// that arms the agent inside this process (captures go to a temporary
// directory) and disarms it, and prints the ready line with control=URL.
func serveWithAgent(ctx context.Context, spec string) error {
	name, variant, ok := strings.Cut(spec, "/")
	if !ok {
		return fmt.Errorf("-serve %q: want CASE/VARIANT", spec)
	}
	svc, err := serve.Start(ctx, name, variant, "", "")
	if err != nil {
		return err
	}
	defer svc.Close()
	captures, err := os.MkdirTemp("", "perfdoctor-overhead-captures")
	if err != nil {
		return err
	}
	defer os.RemoveAll(captures)

	var mu sync.Mutex
	var running *agent.Agent
	mux := http.NewServeMux()
	mux.HandleFunc("POST /agent/on", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if running != nil {
			http.Error(w, "agent already armed", http.StatusConflict)
			return
		}
		a, err := agent.Start(ctx, agent.Options{CaptureDir: captures, FlightRecorder: r.FormValue("flight") == "1"})
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		running = a
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("POST /agent/off", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if running != nil {
			err := running.Close()
			running = nil
			if err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
		}
		w.WriteHeader(http.StatusNoContent)
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	control := &http.Server{Handler: mux}
	go control.Serve(ln)
	defer control.Close()
	fmt.Println(svc.ReadyLine() + " control=http://" + ln.Addr().String())
	if err := svc.Wait(); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}
