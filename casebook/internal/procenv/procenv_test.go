package procenv

import (
	"runtime"
	"runtime/debug"
	"slices"
	"testing"
)

func TestWith(t *testing.T) {
	env := With([]string{"A=1", "GOMAXPROCS=8", "GOMAXPROCSX=1"}, "GOMAXPROCS", "64")
	if !slices.Equal(env, []string{"A=1", "GOMAXPROCSX=1", "GOMAXPROCS=64"}) {
		t.Errorf("With set: %v", env)
	}
	if env := With([]string{"GOMAXPROCS=8", "B=2"}, "GOMAXPROCS", ""); !slices.Equal(env, []string{"B=2"}) {
		t.Errorf("With unset: %v", env)
	}
}

func TestSetupInProcess(t *testing.T) {
	procs, gc := runtime.GOMAXPROCS(0), debug.SetGCPercent(-1)
	debug.SetGCPercent(gc)
	restore, err := Setup(map[string]string{"GOMAXPROCS": "7", "GOGC": "300"}, false)
	if err != nil {
		t.Fatal(err)
	}
	if got := runtime.GOMAXPROCS(0); got != 7 {
		t.Errorf("GOMAXPROCS %d, want 7", got)
	}
	if got := debug.SetGCPercent(300); got != 300 {
		t.Errorf("GOGC %d, want 300", got)
	}
	restore()
	if runtime.GOMAXPROCS(0) != procs || debug.SetGCPercent(gc) != gc {
		t.Error("restore did not put the settings back")
	}
}
