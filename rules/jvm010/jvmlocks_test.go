package jvm010

import (
	"strings"
	"testing"

	"github.com/perfdoctor/perfdoctor/rules"
	"github.com/perfdoctor/perfdoctor/rules/jvmthreads/jvmthreadstest"
)

// Eight threads sleeping 5 ms inside one monitor and one ReentrantLock:
// both locks, their classes and their sites.
func TestFiresOnContendedLocks(t *testing.T) {
	res := jvmthreadstest.Run(t, "locks", Rule)
	if len(res.Findings) != 1 {
		t.Fatalf("got %+v", res)
	}
	f := res.Findings[0]
	if f.Severity != rules.High || !strings.Contains(f.Summary, "ThreadWork.updateUnder") {
		t.Errorf("summary %q at %s", f.Summary, f.Severity)
	}
	roles := map[string]string{}
	for _, l := range f.Locations {
		roles[l.Function] = l.Role
	}
	if roles["perfdoctor.fixtures.ThreadWork.updateUnderMonitor"] != "waits for java.lang.Object" ||
		roles["perfdoctor.fixtures.ThreadWork.updateUnderLock"] != "waits for java.util.concurrent.locks.ReentrantLock$NonfairSync" {
		t.Errorf("locations %+v", f.Locations)
	}
	// The synchronized method holds its monitor; the method calling
	// LOCK.lock() holds the ReentrantLock until its finally block.
	if f.Claim == nil || strings.Join(f.Claim.HeldIn, ",") != "perfdoctor.fixtures.ThreadWork.updateUnderMonitor,perfdoctor.fixtures.ThreadWork.updateUnderLock" &&
		strings.Join(f.Claim.HeldIn, ",") != "perfdoctor.fixtures.ThreadWork.updateUnderLock,perfdoctor.fixtures.ThreadWork.updateUnderMonitor" {
		t.Errorf("held in %+v", f.Claim)
	}
}

// The same threads sleeping outside the locks, idle pool workers parked
// on their queue's lock (400 of them) and JFR's own waits: silent.
func TestSilentWithoutContention(t *testing.T) {
	for _, mode := range []string{"unlocked", "rightpool", "largepool", "unpinned", "balanced"} {
		if res := jvmthreadstest.Run(t, mode, Rule); len(res.Findings) != 0 {
			t.Errorf("%s: %+v", mode, res.Findings)
		}
	}
}
