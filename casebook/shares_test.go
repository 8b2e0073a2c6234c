package casebook

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"
	"github.com/perfdoctor/perfdoctor/load"
)

// Frames that make a CPU sample GC work (marking, assists, sweeping) and
// connection churn (per-datagram dial and close).
var (
	gcFrames = []string{
		"runtime.gcBgMarkWorker", "runtime.gcAssistAlloc", "runtime.gcAssistAlloc1",
		"runtime.bgsweep", "runtime.sweepone", "runtime.(*sweepLocked).sweep",
		"runtime.scanobject", "runtime.scanObject", "runtime.scanSpan", "runtime.gcDrain", "runtime.gcDrainN", "runtime.markroot",
	}
	churnFrames = []string{"net.DialUDP", "net.(*conn).Close"}
)

// TestCPUShares checks that each bad variant shows its finding class in a CPU
// profile and the fixed one does not. It loads each variant for 8 s, so it is
// opt-in: PERFDOCTOR_CASEBOOK_PROFILE=1 go test -run CPUShares -v ./casebook/
// Set PERFDOCTOR_CASEBOOK_PROFILE_DIR to keep the profiles for `go tool pprof`.
func TestCPUShares(t *testing.T) {
	if os.Getenv("PERFDOCTOR_CASEBOOK_PROFILE") == "" {
		t.Skip("set PERFDOCTOR_CASEBOOK_PROFILE=1 to run (40 s of load)")
	}
	for _, tc := range []struct {
		caseName, variant string
		frames            []string
		min, max          float64 // bounds on the share, percent
	}{
		{"d1", "bad", gcFrames, 25, 100},
		{"d1", "fixed", gcFrames, 0, 5},
		{"d2", "bad", churnFrames, 20, 100},
		{"d2", "fixed", churnFrames, 0, 3},
	} {
		t.Run(tc.caseName+"/"+tc.variant, func(t *testing.T) {
			prof := profileUnderLoad(t, tc.caseName, tc.variant, benchConcurrency, 1000, 0, nil)
			share := sampleShare(prof, tc.frames)
			t.Logf("%s/%s: share %.1f%% (want %.0f..%.0f%%) of %s CPU", tc.caseName, tc.variant, share, tc.min, tc.max, cpuTime(prof))
			if share < tc.min || share > tc.max {
				t.Errorf("share %.1f%% outside %.0f..%.0f%%", share, tc.min, tc.max)
			}
		})
	}
}

// profileUnderLoad starts the variant, warms it up (warmRequests requests
// or warmFor of load), puts 8 s of closed-loop load on it and returns a 5 s
// CPU profile taken from 1.5 s in, saved to PERFDOCTOR_CASEBOOK_PROFILE_DIR
// when that is set. after, if given, runs while the load still runs.
func profileUnderLoad(t *testing.T, caseName, variant string, concurrency int, warmRequests int64, warmFor time.Duration, after func(p *variantProc)) *profile.Profile {
	t.Helper()
	p := startVariant(t, caseName, variant)
	drive(t, context.Background(), p.appURL, concurrency, warmRequests, warmFor) // connections, caches
	loaded := make(chan string, 1)
	go func() {
		res, err := load.Run(context.Background(), load.Config{
			URL: p.appURL, Concurrency: concurrency, Duration: 8 * time.Second})
		switch {
		case err != nil:
			loaded <- err.Error()
		case res.Errors > 0:
			loaded <- "load errors: " + res.String()
		default:
			loaded <- res.String()
		}
	}()
	time.Sleep(1500 * time.Millisecond)
	raw := fetch(t, fmt.Sprintf("%s/debug/pprof/profile?seconds=%d", p.pprofURL, 5), 15*time.Second)
	saveProfile(t, caseName+"-"+variant+".pb.gz", raw)
	prof, err := profile.ParseData(raw)
	if err != nil {
		t.Fatal(err)
	}
	if after != nil {
		after(p)
	}
	t.Log("load:", <-loaded)
	return prof
}

// fetch GETs url and returns the body of a 200 response.
func fetch(t *testing.T, url string, timeout time.Duration) []byte {
	t.Helper()
	c := &http.Client{Timeout: timeout}
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("%s: status %d, %v", url, resp.StatusCode, err)
	}
	return raw
}

// saveProfile keeps a raw profile in PERFDOCTOR_CASEBOOK_PROFILE_DIR, if set.
func saveProfile(t *testing.T, name string, raw []byte) {
	t.Helper()
	dir := os.Getenv("PERFDOCTOR_CASEBOOK_PROFILE_DIR")
	if dir == "" {
		return
	}
	if err := os.WriteFile(filepath.Join(dir, name), raw, 0o644); err != nil {
		t.Error(err)
	}
}

// sampleShare is the percentage of CPU time in samples with any of the frames
// on the stack (pprof's -cum view, summed without double counting).
func sampleShare(p *profile.Profile, frames []string) float64 {
	idx := len(p.SampleType) - 1 // cpu nanoseconds
	var hit, total int64
	for _, s := range p.Sample {
		v := s.Value[idx]
		total += v
	stack:
		for _, loc := range s.Location {
			for _, ln := range loc.Line {
				for _, f := range frames {
					if ln.Function != nil && ln.Function.Name == f {
						hit += v
						break stack
					}
				}
			}
		}
	}
	if total == 0 {
		return 0
	}
	return 100 * float64(hit) / float64(total)
}

func cpuTime(p *profile.Profile) string {
	idx := len(p.SampleType) - 1
	var total int64
	for _, s := range p.Sample {
		total += s.Value[idx]
	}
	return strings.TrimSpace(time.Duration(total).Round(10 * time.Millisecond).String())
}
