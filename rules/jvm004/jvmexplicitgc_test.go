package jvm004

import (
	"strings"
	"testing"
	"time"

	"github.com/perfdoctor/perfdoctor/facts"

	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/formats/jfr"
	"github.com/perfdoctor/perfdoctor/rules"
)

func run(g jfr.GC) rules.Result {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ev := evidence.NewBuilder("test").Evidence()
	ev.JVM = &jfr.Summary{Start: t0, End: t0.Add(10 * time.Second), GC: g}
	return rules.Run(facts.New(ev), []*rules.Rule{Rule})
}

func TestFiresOnSystemGC(t *testing.T) {
	res := run(jfr.GC{Collections: 5, Explicit: 2, ExplicitPause: 300 * time.Millisecond, ExplicitCallers: []string{"com.acme.Cache.evictAll"}})
	if len(res.Findings) != 1 {
		t.Fatalf("got %+v", res)
	}
	f := res.Findings[0]
	if f.Impact != 0.03 || !strings.Contains(f.Summary, "called from com.acme.Cache.evictAll") || f.Locations[0].Function != "com.acme.Cache.evictAll" {
		t.Errorf("got %+v", f)
	}
}

func TestSilent(t *testing.T) {
	for name, g := range map[string]jfr.GC{
		"no explicit GC":    {Collections: 5},
		"DisableExplicitGC": {Collections: 5, Explicit: 1, ExplicitOff: true},
	} {
		if res := run(g); len(res.Findings) != 0 {
			t.Errorf("%s: got %+v", name, res.Findings)
		}
	}
}
