package perf

import (
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/perfdoctor/perfdoctor/formats/perfscript"
)

// TestRecordLive records this test process with the real perf while it
// opens and closes loopback connections, and expects kernel frames.
func TestRecordLive(t *testing.T) {
	if _, err := exec.LookPath("perf"); err != nil {
		t.Skip("perf is not installed (scripts/test.sh installs linux-perf)")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	// perf's build-ID cache lives under $HOME/.debug: the recording must
	// leave none (noBuildIDCache).
	home := t.TempDir()
	t.Setenv("HOME", home)
	var stop atomic.Bool
	done := make(chan struct{})
	go func() {
		defer close(done)
		for n := 0; !stop.Load() && n < 200000; n++ {
			if c, err := net.Dial("tcp", ln.Addr().String()); err == nil {
				c.Close()
			}
		}
	}()
	p, err := Record(context.Background(), Options{PID: os.Getpid(), Duration: 2 * time.Second, Frequency: 199})
	stop.Store(true)
	<-done
	if err != nil {
		if strings.Contains(err.Error(), "not permitted") {
			t.Skip(err)
		}
		t.Fatal(err)
	}
	if err := p.CheckValid(); err != nil {
		t.Fatal(err)
	}
	var samples, kernel int64
	pids := map[int64]bool{}
	for _, s := range p.Sample {
		samples += s.Value[0]
		pids[s.NumLabel["pid"][0]] = true
		for _, l := range s.Location {
			if perfscript.IsKernel(l) {
				kernel += s.Value[0]
				break
			}
		}
	}
	t.Logf("%d samples, %d with kernel frames, %d locations", samples, kernel, len(p.Location))
	if samples < 20 || kernel*4 < samples {
		t.Errorf("%d samples, %d with kernel frames: want most in the kernel for a connect loop", samples, kernel)
	}
	if len(pids) != 1 || !pids[int64(os.Getpid())] {
		t.Errorf("pids %v, want only ours", pids)
	}
	if p.SampleType[1].Type != "cpu-clock" {
		t.Errorf("sample types %v", p.SampleType)
	}
	if _, err := os.Stat(filepath.Join(home, ".debug")); !os.IsNotExist(err) {
		t.Errorf("perf record wrote its build-ID cache to %s/.debug (%v)", home, err)
	}
}

func TestRecordUnavailable(t *testing.T) {
	ctx := context.Background()
	if _, err := Record(ctx, Options{Duration: time.Second, Perf: "/nonexistent/perf"}); !errors.Is(err, ErrNotInstalled) {
		t.Errorf("missing perf: %v", err)
	}
	// A perf that fails (here: one that cannot record) is an error naming the step.
	_, err := Record(ctx, Options{Duration: time.Second, Perf: "false"})
	if err == nil || !strings.HasPrefix(err.Error(), "perf record:") {
		t.Errorf("failing perf: %v", err)
	}
	if _, err := Record(ctx, Options{Duration: time.Millisecond}); err == nil {
		t.Error("too short a duration accepted")
	}
}
