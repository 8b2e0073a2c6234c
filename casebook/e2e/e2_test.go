package e2e

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/procfs"

	"github.com/perfdoctor/perfdoctor/bundle"
	"github.com/perfdoctor/perfdoctor/casebook/internal/harness"
	"github.com/perfdoctor/perfdoctor/load"
)

// e2Run loads a variant of case E2 for warmup+window+3 s, collects a bundle
// over the window (with --perf when perf is installed) and diagnoses it. It
// returns the load's requests in the window the bundle covers: on a busy
// machine the collection slows the service, so the run's average rate is
// not the window's (CI: 1,478 requests/s over the run, 782 new TIME_WAIT
// sockets a second in the window).
func e2Run(t *testing.T, variant string) ([]harness.Finding, loadWindow) {
	t.Helper()
	s := start(t, "e2", variant)
	const warmup, window = time.Second, 5 * time.Second
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type loaded struct {
		res *load.Result
		err error
	}
	done := make(chan loaded, 1)
	loadStart := time.Now()
	go func() {
		res, err := load.Run(ctx, load.Config{URL: s.app, Concurrency: 8, Duration: warmup + window + 3*time.Second})
		done <- loaded{res, err}
	}()
	time.Sleep(warmup)
	dir := filepath.Join(t.TempDir(), "bundle")
	args := []string{"collect", s.pprofURL, "-d", window.String(), "-o", dir}
	if _, err := exec.LookPath("perf"); err == nil {
		args = append(args, "--perf")
	}
	if out, err := exec.Command(bin.perfdoctor, args...).CombinedOutput(); err != nil {
		t.Fatalf("perfdoctor collect: %v\n%s", err, out)
	}
	l := <-done
	if l.err != nil {
		t.Fatalf("load: %v", l.err)
	}
	t.Logf("load: %s", l.res)
	findings := harness.Diagnose(t, bin.perfdoctor, dir).Findings
	m, err := bundle.ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range m.Items {
		if it.Name == "perf" && it.Status != bundle.StatusOK {
			if strings.Contains(it.Error, "not permitted") {
				t.Logf("perf not permitted here: %s", it.Error)
			} else {
				t.Errorf("perf item %s: %s", it.Status, it.Error)
			}
		}
	}
	return findings, betweenSnapshots(t, dir, l.res, loadStart)
}

// loadWindow is the load's requests between a bundle's two /proc snapshots.
type loadWindow struct{ requests, seconds float64 }

func (w loadWindow) rate() float64 { return w.requests / w.seconds }

// betweenSnapshots counts the load's requests between the bundle's two /proc
// snapshots (whose TIME_WAIT counts the finding's growth compares), from its
// per-second timeline counted from loadStart.
func betweenSnapshots(t *testing.T, dir string, res *load.Result, loadStart time.Time) loadWindow {
	t.Helper()
	var at [2]float64
	for i, name := range []string{bundle.SystemStartFile, bundle.SystemEndFile} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		var snap bundle.SystemSnapshot
		if err := json.Unmarshal(b, &snap); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		at[i] = snap.Time.Sub(loadStart).Seconds()
	}
	if at[1] <= at[0] {
		t.Fatalf("snapshots at %.2f s and %.2f s of the load: no window", at[0], at[1])
	}
	var requests float64
	for _, s := range res.Timeline {
		from, to := max(float64(s.T), at[0]), min(float64(s.T+1), at[1])
		if to > from {
			requests += float64(s.OK+s.Errors) * (to - from)
		}
	}
	return loadWindow{requests, at[1] - at[0]}
}

// TestE2PortCeiling checks the numbers of the ephemeral-port finding on E2's
// bad variant against what the test measures itself (the kernel's port range,
// the load's request rate, the TIME_WAIT sockets in /proc), and that the
// fixed variant, with kept-alive connections, has no such finding at all.
func TestE2PortCeiling(t *testing.T) {
	fs, err := procfs.NewDefaultFS()
	if err != nil {
		t.Skip("needs /proc:", err)
	}
	rng, err := fs.SysctlInts("net.ipv4.ip_local_port_range")
	if err != nil || len(rng) != 2 {
		t.Skip("cannot read ip_local_port_range:", err)
	}
	ceiling := float64(rng[1]-rng[0]+1) / 60

	t.Run("bad", func(t *testing.T) {
		findings, window := e2Run(t, "bad")
		reqRate := window.rate()
		t.Logf("between the snapshots: %.0f requests in %.2f s", window.requests, window.seconds)
		if len(findings) == 0 || findings[0].Class != "ephemeral-port-exhaustion" || findings[0].Severity != "high" {
			t.Fatalf("top finding is not ephemeral-port-exhaustion at high: %+v", findings)
		}
		f := findings[0]
		if got := f.Fact(t, "ceiling per destination"); math.Abs(got-ceiling) > 0.01 {
			t.Errorf("ceiling %.2f/s, want %.2f/s (ports / 60 s)", got, ceiling)
		}
		// Each request is one connection: the estimated rate follows the
		// load's request rate over the window.
		rate := f.Fact(t, "new connections per second (estimated)")
		if rate < 0.6*reqRate || rate > 1.4*reqRate {
			t.Errorf("estimated %.0f new connections/s, the load made %.0f requests/s", rate, reqRate)
		}
		// Every request leaves a TIME_WAIT socket, but on loopback the
		// kernel reuses one older than a second when connect() lands on its
		// port (net.ipv4.tcp_tw_reuse = 2, the default), and connect() picks
		// from the range's even ports first, so a new connection replaces a
		// TIME_WAIT with at most the share of the even ports they hold:
		// growth is at least requests × (1 − TIME_WAIT / half the range).
		// CI: 7,471 requests in the window, 4,094 more TIME_WAIT, 8,925 at
		// its end of 14,116 even ports (a reuse of 45%, under the 63% bound).
		growth := f.Fact(t, "TIME_WAIT growth over the window")
		held := f.Fact(t, "TIME_WAIT to destination at end")
		least := window.requests * max(0, 1-held/(float64(rng[1]-rng[0]+1)/2))
		if growth < 0.9*least || growth > 1.4*window.requests {
			t.Errorf("TIME_WAIT grew by %.0f in the %.1f s window, which had %.0f requests (at least %.0f new with %.0f held at its end)",
				growth, window.seconds, window.requests, least, held)
		}
		// The finding's destination, counted independently after the load:
		// TIME_WAIT lasts 60 s, so no fewer than at the end of the window.
		dst := f.Evidence[0].Value
		tw := countTimeWait(t, fs, dst)
		if end := f.Fact(t, "TIME_WAIT to destination at end"); end > float64(tw) || end < 0.5*float64(tw) {
			t.Errorf("finding counts %.0f TIME_WAIT to %s at the end of the window; /proc shows %d after the load", end, dst, tw)
		}
		t.Logf("ceiling %.1f/s, estimated %.0f/s, load %.0f req/s, TIME_WAIT to %s now %d", ceiling, rate, reqRate, dst, tw)
	})
	t.Run("fixed", func(t *testing.T) {
		findings, _ := e2Run(t, "fixed")
		for _, f := range findings {
			if f.Class == "ephemeral-port-exhaustion" {
				t.Errorf("fixed variant reported: %s", f.Summary)
			}
		}
	})
}

// countTimeWait counts TIME_WAIT sockets to host:port in /proc/net/tcp{,6}.
func countTimeWait(t *testing.T, fs procfs.FS, dst string) int {
	t.Helper()
	n := 0
	for _, read := range []func() (procfs.NetTCP, error){fs.NetTCP, fs.NetTCP6} {
		lines, err := read()
		if err != nil {
			if os.IsNotExist(err) {
				continue
			}
			t.Fatal(err)
		}
		for _, l := range lines {
			ip := l.RemAddr
			if v4 := ip.To4(); v4 != nil {
				ip = v4
			}
			if l.St == 6 && strings.EqualFold(ip.String()+":"+strconv.FormatUint(l.RemPort, 10), dst) {
				n++
			}
		}
	}
	return n
}
