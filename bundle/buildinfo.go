package bundle

import (
	"regexp"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
)

// BuildInfo is what a Go executable says about how it was built: the
// toolchain, GOEXPERIMENTs, profile-guided optimisation and the modules
// linked in. Rules use it where it changes the advice.
type BuildInfo struct {
	GoVersion   string   `json:"go_version"`             // e.g. "go1.27.0", experiments stripped
	Experiments []string `json:"experiments,omitempty"`  // GOEXPERIMENT, e.g. "nogreenteagc"
	PGO         string   `json:"pgo,omitempty"`          // the -pgo profile; empty when built without
	Main        string   `json:"main,omitempty"`         // the main module's path
	MainVersion string   `json:"main_version,omitempty"` // its version; "(devel)" or a pseudo-version for a build from a checkout
	// VCS is the version control system of the checkout the program was
	// built in ("git"), empty for a build from the module cache (go install
	// module@version) or without VCS stamping.
	VCS string `json:"vcs,omitempty"`
	// MainPackage is the main package's path: the only one a GOPATH-mode
	// build (such as Debian's) records.
	MainPackage string   `json:"main_package,omitempty"`
	Modules     []string `json:"modules,omitempty"` // dependencies as path@version
	Source      string   `json:"source"`            // "executable" or "agent"
}

// NewBuildInfo converts the runtime's build information.
func NewBuildInfo(bi *debug.BuildInfo, source string) *BuildInfo {
	if bi == nil {
		return nil
	}
	b := &BuildInfo{Source: source, Main: bi.Main.Path, MainVersion: bi.Main.Version, MainPackage: bi.Path}
	version, exp, _ := strings.Cut(bi.GoVersion, " X:")
	b.GoVersion = version
	if exp != "" {
		b.Experiments = strings.Split(exp, ",")
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "GOEXPERIMENT":
			for _, e := range strings.Split(s.Value, ",") {
				if e != "" && !slices.Contains(b.Experiments, e) {
					b.Experiments = append(b.Experiments, e)
				}
			}
		case "-pgo":
			b.PGO = s.Value
		case "vcs":
			b.VCS = s.Value
		}
	}
	for _, d := range bi.Deps {
		if d.Replace != nil {
			d = d.Replace
		}
		b.Modules = append(b.Modules, d.Path+"@"+d.Version)
	}
	return b
}

// pseudoVersion matches the versions the go command makes up for a commit
// with no tag of its own (vX.0.0-yyyymmddhhmmss-abcdefabcdef, or after a
// tag vX.Y.(Z+1)-0.yyyymmddhhmmss-abcdefabcdef and vX.Y.Z-pre.0.yyyymmddhhmmss-abcdefabcdef),
// with the +dirty a build from a modified checkout carries.
var pseudoVersion = regexp.MustCompile(`^v[0-9]+\.[0-9]+\.[0-9]+-(?:[0-9A-Za-z.-]*[.-])?[0-9]{14}-[0-9a-f]{12}(?:\+dirty)?$`)

// Released reports whether the main module is a released version: one the
// program's maintainers published. A build in a checkout is not, though the
// go command stamps it with a version: a pseudo-version for an untagged
// commit, or a +dirty one for a modified tree. A pseudo-version installed
// from the module cache (go install module@commit) is someone else's
// unreleased code, still not the builder's own: it counts as released.
func (b *BuildInfo) Released() bool {
	if b == nil {
		return false
	}
	v := b.MainVersion
	switch {
	case v == "" || v == "(devel)":
		return false
	case b.VCS != "" && (pseudoVersion.MatchString(v) || strings.HasSuffix(v, "+dirty")):
		return false
	}
	return true
}

// GoMinor is the minor release of a Go version ("go1.27.0" -> 27), or 0.
func GoMinor(version string) int {
	rest, ok := strings.CutPrefix(version, "go1.")
	if !ok {
		return 0
	}
	end := strings.IndexFunc(rest, func(r rune) bool { return r < '0' || r > '9' })
	if end >= 0 {
		rest = rest[:end]
	}
	n, _ := strconv.Atoi(rest)
	return n
}

// Module reports the linked module whose path starts with prefix, as path@version.
func (b *BuildInfo) Module(prefix string) (string, bool) {
	if b == nil {
		return "", false
	}
	for _, m := range b.Modules {
		if strings.HasPrefix(m, prefix) {
			return m, true
		}
	}
	return "", false
}

// GreenTea reports whether the Green Tea garbage collector is on: the
// default from Go 1.26 (off with GOEXPERIMENT=nogreenteagc), opt-in with
// GOEXPERIMENT=greenteagc in Go 1.25, absent before.
func (b *BuildInfo) GreenTea() bool {
	switch minor := GoMinor(b.GoVersion); {
	case minor >= 26:
		return !slices.Contains(b.Experiments, "nogreenteagc")
	case minor == 25:
		return slices.Contains(b.Experiments, "greenteagc")
	}
	return false
}

// RedundantModules are modules whose job the runtime now does itself, with
// the first Go release that does it and why the module then hurts.
var RedundantModules = []struct {
	Module string
	Since  int // Go 1.N
	Why    string
}{
	{"go.uber.org/automaxprocs", 25, "Go >= 1.25 sets GOMAXPROCS from the cgroup CPU limit and updates it when the limit changes; automaxprocs sets it once at start, which turns those updates off"},
}

// Redundant lists the linked modules the build's Go makes redundant, each
// as "path@version: why".
func (b *BuildInfo) Redundant() []string {
	if b == nil {
		return nil
	}
	var out []string
	for _, r := range RedundantModules {
		if m, ok := b.Module(r.Module); ok && GoMinor(b.GoVersion) >= r.Since {
			out = append(out, m+": "+r.Why)
		}
	}
	return out
}
