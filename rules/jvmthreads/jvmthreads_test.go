package jvmthreads

import (
	"testing"
	"time"

	"github.com/perfdoctor/perfdoctor/formats/jfr"
)

func TestFeature(t *testing.T) {
	for version, want := range map[string]int{
		"OpenJDK 64-Bit Server VM (25.0.3+9-LTS) for linux-amd64 JRE (25.0.3+9-LTS), built on 2026-04-21T00:00:00Z with gcc 14.2.0":  25,
		"OpenJDK 64-Bit Server VM (17.0.15+6-Debian-1deb12u1) for linux-amd64 JRE (17.0.15+6-Debian-1deb12u1), built on May  1 2025": 17,
		"OpenJDK 64-Bit Server VM (25.402-b06) for linux-amd64 JRE (1.8.0_402-b06), built on Jan 10 2024":                            8,
		"": 0,
	} {
		if got := Feature(&jfr.Summary{JVMVersion: version}); got != want {
			t.Errorf("Feature(%q) = %d, want %d", version, got, want)
		}
	}
	s := &jfr.Summary{JVMVersion: "JRE (17.0.1)", Properties: map[string]string{"java.specification.version": "21"}}
	if got := Feature(s); got != 21 {
		t.Errorf("the property comes first: got %d", got)
	}
}

// A wait is named by the service's first frame, and waits that differ
// only deeper in their stacks are one location.
func TestSitesAndLocations(t *testing.T) {
	stack := func(deeper string) []jfr.StackFrame {
		return []jfr.StackFrame{
			{Func: "java.lang.Thread.sleep", File: "java/lang/Thread.java", Line: 540},
			{Func: "com.acme.ledger.Ledger.book", File: "com/acme/ledger/Ledger.java", Line: 51},
			{Func: deeper},
		}
	}
	if got := SiteName(stack("com.acme.A.run")); got != "Ledger.book (Ledger.java:51)" {
		t.Errorf("site %q", got)
	}
	if got := SiteName(nil); got != "an unknown site" {
		t.Errorf("empty stack: %q", got)
	}
	waits := []jfr.WaitSite{{Stack: stack("com.acme.A.run"), Total: 3 * time.Second}, {Stack: stack("com.acme.B.run"), Total: time.Second}}
	locs := Locations(waits, 4*time.Second, 5, func(jfr.WaitSite) string { return "waits" })
	if len(locs) != 1 || locs[0].Function != "com.acme.ledger.Ledger.book" || locs[0].Share != 1 || locs[0].Line != 51 {
		t.Errorf("locations %+v", locs)
	}
}
