// Package version is perfdoctor's one version source: bundles, reports,
// SARIF and `perfdoctor --version` all name the producer through it, so a
// bundle and the report made from it never disagree.
package version

import "runtime/debug"

// Version is set at build time with
// -ldflags "-X github.com/perfdoctor/perfdoctor/internal/version.Version=v1.2.3";
// otherwise the module version `go install ...@v1.2.3` recorded, else the
// development version.
var Version = ""

const development = "0.1.0-dev"

// String is the version in effect.
func String() string {
	if Version != "" {
		return Version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return development
}

// Tool names the producer in bundles and reports: "perfdoctor VERSION".
func Tool() string { return "perfdoctor " + String() }
