package bundle

import (
	"runtime/debug"
	"strings"
	"testing"
)

func TestNewBuildInfo(t *testing.T) {
	bi := &debug.BuildInfo{
		GoVersion: "go1.26.8 X:nogreenteagc",
		Main:      debug.Module{Path: "example.com/svc"},
		Deps: []*debug.Module{
			{Path: "go.uber.org/automaxprocs", Version: "v1.6.0"},
			{Path: "example.com/old", Version: "v1.0.0", Replace: &debug.Module{Path: "example.com/new", Version: "v1.1.0"}},
		},
		Settings: []debug.BuildSetting{{Key: "GOEXPERIMENT", Value: "nogreenteagc,jsonv2"}, {Key: "-pgo", Value: "/src/default.pgo"}},
	}
	b := NewBuildInfo(bi, "executable")
	if b.GoVersion != "go1.26.8" || strings.Join(b.Experiments, ",") != "nogreenteagc,jsonv2" || b.PGO != "/src/default.pgo" {
		t.Errorf("%+v", b)
	}
	if b.GreenTea() {
		t.Error("Green Tea reported on with GOEXPERIMENT=nogreenteagc")
	}
	if m, ok := b.Module("example.com/new"); !ok || m != "example.com/new@v1.1.0" {
		t.Errorf("replaced module: %q %v", m, ok)
	}
	if r := b.Redundant(); len(r) != 1 || !strings.HasPrefix(r[0], "go.uber.org/automaxprocs@v1.6.0: ") {
		t.Errorf("redundant on 1.26: %v", r)
	}
	b.GoVersion = "go1.24.3"
	if r := b.Redundant(); len(r) != 0 {
		t.Errorf("automaxprocs is not redundant on Go 1.24: %v", r)
	}
	for v, want := range map[string]bool{"go1.27.0": true, "go1.25.1": false, "go1.24.0": false} {
		if got := (&BuildInfo{GoVersion: v}).GreenTea(); got != want {
			t.Errorf("GreenTea(%s) = %v", v, got)
		}
	}
	if !(&BuildInfo{GoVersion: "go1.25.1", Experiments: []string{"greenteagc"}}).GreenTea() {
		t.Error("Go 1.25 with GOEXPERIMENT=greenteagc")
	}
	if GoMinor("go1.27rc1") != 27 || GoMinor("devel") != 0 {
		t.Error("GoMinor")
	}
}

// TestReleased tells a published version from the version the go command
// stamps on a build in a checkout (a fresh clone's untagged commit builds as
// a pseudo-version, which a released-build reading once took for a release).
func TestReleased(t *testing.T) {
	for _, c := range []struct {
		version, vcs string
		want         bool
	}{
		{"(devel)", "", false},
		{"", "", false},
		{"v2.6.2", "", true},    // go install module@v2.6.2
		{"v2.6.2", "git", true}, // a release built at its tag
		{"v0.0.0-20261127192951-0457aa982ddb", "git", false},        // a clone's untagged commit
		{"v0.0.0-20261127192951-0457aa982ddb+dirty", "git", false},  // with uncommitted changes
		{"v2.6.3-0.20261127192951-0457aa982ddb", "git", false},      // a commit after a tag
		{"v2.7.0-rc.1.0.20261127192951-0457aa982ddb", "git", false}, // a commit after a pre-release
		{"v2.6.2+dirty", "git", false},                              // the tag, modified
		{"v0.0.0-20261127192951-0457aa982ddb", "", true},            // go install module@commit: not the builder's
	} {
		b := NewBuildInfo(&debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "example.com/svc", Version: c.version},
			Settings: []debug.BuildSetting{{Key: "vcs", Value: c.vcs}}}, "executable")
		if c.vcs == "" {
			b.VCS = ""
		}
		if got := b.Released(); got != c.want {
			t.Errorf("%q built with vcs %q: released %v, want %v", c.version, c.vcs, got, c.want)
		}
	}
	if (*BuildInfo)(nil).Released() {
		t.Error("no build info read as released")
	}
}
