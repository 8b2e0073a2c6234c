package load

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestCommandLoadCountsWholeRuns(t *testing.T) {
	dir := t.TempDir()
	marks := filepath.Join(dir, "runs")
	// Each run appends the port it was given, so the test sees both the
	// runs and the substitution.
	res, err := Run(context.Background(), Config{
		URL:         "tcp://127.0.0.1:6399",
		Command:     "echo {port} >> " + marks,
		UnitsPerRun: 50,
		Unit:        "SET",
		Duration:    300 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(marks)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Fields(string(b))
	if res.Mode != ModeCommand || res.Runs < 1 || int64(len(lines)) != res.Runs {
		t.Fatalf("mode %s, %d runs reported, %d runs made", res.Mode, res.Runs, len(lines))
	}
	for _, l := range lines {
		if l != "6399" {
			t.Fatalf("{port} became %q", l)
		}
	}
	if res.Requests != 50*res.Runs || res.Errors != 0 || res.Throughput <= 0 {
		t.Fatalf("requests %d errors %d throughput %g for %d runs of 50", res.Requests, res.Errors, res.Throughput, res.Runs)
	}
	if j := res.Schema(); j.Mode != ModeCommand || j.Unit != "SET" || j.UnitsPerRun != 50 || j.Runs != res.Runs || j.Started.IsZero() {
		t.Fatalf("load.json lost the command load: %+v", j)
	}
	var timed int64
	for _, s := range res.Timeline {
		timed += s.OK
	}
	if timed != res.Requests {
		t.Fatalf("the timeline holds %d units of %d", timed, res.Requests)
	}
}

func TestCommandLoadFailsFastOnABadCommand(t *testing.T) {
	res, err := Run(context.Background(), Config{Command: "echo no such tool >&2; exit 3", UnitsPerRun: 10, Duration: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	// A command that never worked is not repeated for a minute.
	if res.Runs != 1 {
		t.Fatalf("%d runs of a failing command", res.Runs)
	}
	err = res.AllFailed()
	if err == nil || !strings.Contains(err.Error(), "no such tool") || !strings.Contains(err.Error(), "exit status 3") {
		t.Fatalf("AllFailed = %v, want the command's own words", err)
	}
}

func TestCommandLoadStoppedByTheCallerCountsNoPartialRun(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(200 * time.Millisecond); cancel() }()
	res, err := Run(ctx, Config{Command: "sleep 30", UnitsPerRun: 10, Duration: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Interrupted || res.Requests != 0 || res.Unfinished != 10 || res.Throughput != 0 {
		t.Fatalf("interrupted %v, requests %d, unfinished %d, throughput %g", res.Interrupted, res.Requests, res.Unfinished, res.Throughput)
	}
}

func TestCommandLoadSettings(t *testing.T) {
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{Command: "true", Duration: time.Second}, "units of work"},
		{Config{Command: "true", UnitsPerRun: 1, Rate: 10, Duration: time.Second}, "sets its own pace"},
		{Config{Command: "x -p {port}", UnitsPerRun: 1, Duration: time.Second}, "no target address"},
		{Config{Command: "x -p {port}", URL: "tcp://127.0.0.1", UnitsPerRun: 1, Duration: time.Second}, "has no port"},
		{Config{Command: "true", UnitsPerRun: 1}, "duration"},
	} {
		_, err := Run(context.Background(), c.cfg)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want %q", c.cfg, err, c.want)
		}
	}
}

func TestCommandLoadRedactsCredentials(t *testing.T) {
	r := &Result{Mode: ModeCommand, Command: "pgbench -h 127.0.0.1 --password hunter2 postgres://u:pw@h/db"}
	got := r.Schema().Command
	if strings.Contains(got, "hunter2") || strings.Contains(got, ":pw@") {
		t.Fatalf("load.json keeps a credential: %s", got)
	}
}

// A run's units go to the seconds it ran in, in proportion: 100 units over
// 0.5 s to 2.5 s give 25, 50 and 25, and a run inside one second puts all
// of its units there. Successive runs add up; rounding never loses a unit.
func TestSpreadRunOverItsSeconds(t *testing.T) {
	var tl []Second
	ok := func(s *Second, n int64) { s.OK += n }
	spreadRun(&tl, 500*time.Millisecond, 2500*time.Millisecond, 100, ok)
	spreadRun(&tl, 2600*time.Millisecond, 2900*time.Millisecond, 7, ok)
	spreadRun(&tl, 3*time.Second, 3*time.Second+time.Second/3, 10, ok)
	want := []int64{25, 50, 32, 10}
	if len(tl) != len(want) {
		t.Fatalf("timeline %+v, want %d seconds", tl, len(want))
	}
	var total int64
	for i, s := range tl {
		if s.T != i || s.OK != want[i] {
			t.Errorf("second %d: %+v, want OK %d", i, s, want[i])
		}
		total += s.OK
	}
	if total != 117 {
		t.Errorf("total %d, want 117", total)
	}
}
