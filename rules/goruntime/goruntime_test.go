package goruntime

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/perfdoctor/perfdoctor/evidence"
)

func TestHeadroomAdvice(t *testing.T) {
	const mib = 1 << 20
	a := Headroom(evidence.Settings{GOGC: 100, MemoryLimit: 2048 * mib}, 100*mib, 0.30)
	// budget 90% of 2 GiB = 1843 MiB; live 100 MiB -> GOGC 1700; GC CPU 30% * 200/1800.
	if !strings.Contains(a.Text, "GOGC=1700") || !strings.Contains(a.Text, "GOMEMLIMIT=1843MiB") {
		t.Errorf("advice = %q", a.Text)
	}
	if !strings.Contains(a.Text, "3.3%") {
		t.Errorf("expected GC share after the change (3.3%%) missing: %q", a.Text)
	}
	if a.Config == nil || a.Config.String() != "GOMEMLIMIT=1843MiB GOGC=1700" || a.Config.Changes[1].Now != "100" || math.Abs(a.Config.Gain-(0.30-0.30*200/1800)) > 1e-9 {
		t.Errorf("config fix = %+v", a.Config)
	}
	env := a.Config.Environ([]string{"PATH=/bin", "GOGC=100"})
	if !slices.Equal(env, []string{"PATH=/bin", "GOGC=1700", "GOMEMLIMIT=1843MiB"}) {
		t.Errorf("environ = %q", env)
	}
	tight := Headroom(evidence.Settings{GOGC: 100, MemoryLimit: 200 * mib}, 150*mib, 0.30)
	if !strings.Contains(tight.Text, "no room") {
		t.Errorf("tight memory advice = %q", tight.Text)
	}
	if tight.Config != nil {
		t.Errorf("no room to raise GOGC, yet a config fix: %+v", tight.Config)
	}
	unlimited := Headroom(evidence.Settings{GOGC: 100, MemTotal: 24 << 30}, 16*mib, 0.40)
	if !strings.Contains(unlimited.Text, "GOMEMLIMIT=921MiB") {
		t.Errorf("without a limit, want a 1 GiB budget (90%% = 921 MiB): %q", unlimited.Text)
	}
	off := Headroom(evidence.Settings{GOGC: -1}, 100*mib, 0.30)
	if !strings.Contains(off.Text, "already off") {
		t.Errorf("GOGC=off advice = %q", off.Text)
	}
}
