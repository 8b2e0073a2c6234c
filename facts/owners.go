package facts

import (
	"fmt"
	"path"
	"regexp"
	"strings"

	"github.com/perfdoctor/perfdoctor/bundle"
	"github.com/perfdoctor/perfdoctor/evidence"
)

// Owner is whose code a cost is in, which decides what a prescription may
// ask: an edit to the service's own code, or configuration and choice for
// code the user does not maintain.
type Owner int

const (
	OwnerUnknown    Owner = iota
	OwnerMain             // the main module: the program's own code
	OwnerDependency       // a third-party module the program imports
	OwnerStdlib           // the Go standard library or runtime
)

// CodeOwners tells the program's own code from its dependencies', from the
// build info when the bundle carries it, else from the profiles' file paths.
type CodeOwners struct {
	// Main is the main module's path, "" when unknown; Source says how it
	// was found.
	Main, Source string
	// Program is set when the whole program is third-party, a released or
	// system-packaged build rather than the user's checkout: even its main
	// module is not the user's to edit.
	Program string
	// moduleCache: some files are in the module cache (path@version), so a
	// file outside it, the standard library and vendor/ is the main module's.
	moduleCache bool
}

// moduleFile matches a file in the module cache or a -trimpath build's
// dependency: ".../pkg/mod/github.com/x/y@v1.2.3/z.go" or "github.com/x/y@v1.2.3/z.go".
var moduleFile = regexp.MustCompile(`@v[0-9][^/]*/`)

// fileModule is the module a module-cache file belongs to.
func fileModule(file string) (string, bool) {
	loc := moduleFile.FindStringIndex(file)
	if loc == nil {
		return "", false
	}
	mod := file[:loc[0]]
	if _, after, ok := strings.Cut(mod, "/pkg/mod/"); ok {
		mod = after
	}
	return unescapeModule(mod), true
}

var majorVersion = regexp.MustCompile(`^v[0-9]+$`)

// systemPrefixes are where a distribution's package manager installs programs.
var systemPrefixes = []string{"/usr/bin/", "/usr/sbin/", "/bin/", "/sbin/", "/usr/lib/", "/usr/libexec/"}

// Owners is who owns the code in the evidence: the main module and whether
// the program itself is a third-party build. Several rules and the engine
// ask, and each reading scans every function of every profile.
var Owners = &Fact[*CodeOwners]{
	Name:    "code-owners",
	Doc:     "Whose code a frame is in: the main module (from the executable's build info, else the profiles' file paths), its dependencies, the standard library; and whether the whole program is a third-party or system-packaged build.",
	Compute: func(p *Pass) *CodeOwners { return readOwners(p.Evidence) },
}

func readOwners(ev *evidence.Evidence) *CodeOwners {
	o := &CodeOwners{}
	for _, snap := range []*bundle.SystemSnapshot{ev.SystemEnd, ev.SystemStart} {
		if snap == nil || snap.Process == nil {
			continue
		}
		p := snap.Process
		b := p.Build
		switch {
		case o.Main != "" || b == nil:
		case b.Main != "":
			o.Main, o.Source = b.Main, "the executable's build info"
			if b.Released() {
				o.Program = fmt.Sprintf("%s %s is a released build", b.Main, b.MainVersion)
			}
		case b.MainPackage != "":
			// A GOPATH-mode build records the main package only.
			o.Main, o.Source = moduleRoot(b.MainPackage), "the executable's main package, read up to its repository"
		}
		for _, pre := range systemPrefixes {
			// A JVM's executable is the launcher (/usr/lib/jvm/.../bin/java):
			// the program is the application it runs, not the package.
			if o.Program == "" && strings.HasPrefix(p.Executable, pre) && path.Base(p.Executable) != "java" {
				o.Program = fmt.Sprintf("%s is installed by the system's package manager", p.Executable)
			}
		}
	}
	var mainFile string
	for _, p := range ev.Profiles {
		if p == nil {
			continue
		}
		for _, fn := range p.Function {
			if moduleFile.MatchString(fn.Filename) {
				o.moduleCache = true
			}
			if mainFile == "" && strings.HasPrefix(fn.Name, "main.") {
				mainFile = fn.Filename
			}
		}
	}
	// A -trimpath build names the main package's files by import path.
	if o.Main == "" && mainFile != "" && !strings.HasPrefix(mainFile, "/") && strings.Contains(mainFile, "/") {
		o.Main, o.Source = moduleRoot(path.Dir(mainFile)), "the main package's file path (-trimpath build), read up to its repository"
	}
	if o.Main == "" && o.moduleCache {
		o.Source = "file paths: files outside the module cache, vendor/ and the standard library are the main module's"
	}
	return o
}

// repoHosts name repositories with three path elements (host/owner/repo);
// elsewhere a module is usually host/name (go.uber.org/zap, k8s.io/klog).
var repoHosts = map[string]bool{"github.com": true, "gitlab.com": true, "bitbucket.org": true, "codeberg.org": true, "gitee.com": true, "golang.org": true}

// moduleRoot guesses a module path from a package path: the repository
// and a major-version suffix.
func moduleRoot(pkg string) string {
	parts := strings.Split(pkg, "/")
	n := 2
	if repoHosts[parts[0]] {
		n = 3
	}
	if len(parts) < n || !strings.Contains(parts[0], ".") {
		return pkg
	}
	if len(parts) > n && majorVersion.MatchString(parts[n]) {
		n++
	}
	return strings.Join(parts[:n], "/")
}

// Ownership is whose code one frame is in.
type Ownership struct {
	Owner  Owner
	Module string // the module (or its best guess) for a dependency
	Why    string // the evidence for the verdict
}

// Of says whose code a frame is in.
func (o *CodeOwners) Of(f evidence.Frame) Ownership {
	fn := f.Func
	if evidence.IsRuntime(fn) || evidence.IsStdlib(fn) {
		return Ownership{Owner: OwnerStdlib, Why: "the Go standard library"}
	}
	if fn == "" || evidence.IsJava(fn) {
		return Ownership{}
	}
	pkg := evidence.PackagePath(fn)
	if _, after, ok := strings.Cut(pkg, "/vendor/"); ok {
		return Ownership{OwnerDependency, moduleRoot(after), "a vendored package"}
	}
	if _, after, ok := strings.Cut(f.File, "/vendor/"); ok {
		return Ownership{OwnerDependency, moduleRoot(path.Dir(after)), "its file is under vendor/"}
	}
	if mod, ok := fileModule(f.File); ok {
		if mod == o.Main {
			// go install pkg@version builds the main module from the cache.
			return Ownership{Owner: OwnerMain, Why: "in the main module " + o.Main + " (" + o.Source + ")"}
		}
		return Ownership{OwnerDependency, mod, "its file is in the module cache (" + path.Base(mod) + "@version)"}
	}
	switch {
	case pkg == "main":
		return Ownership{Owner: OwnerMain, Why: "the main package"}
	case o.Main != "":
		if pkg == o.Main || strings.HasPrefix(pkg, o.Main+"/") {
			return Ownership{Owner: OwnerMain, Why: "in the main module " + o.Main + " (" + o.Source + ")"}
		}
		return Ownership{OwnerDependency, moduleRoot(pkg), "outside the main module " + o.Main + " (" + o.Source + ")"}
	case o.moduleCache && f.File != "":
		return Ownership{Owner: OwnerMain, Why: "its file is outside the module cache and vendor/"}
	}
	return Ownership{}
}

// unescapeModule undoes the module cache's case encoding ("!azure" is "Azure").
func unescapeModule(p string) string {
	if !strings.Contains(p, "!") {
		return p
	}
	var b strings.Builder
	up := false
	for _, r := range p {
		switch {
		case r == '!':
			up = true
			continue
		case up:
			r = []rune(strings.ToUpper(string(r)))[0]
			up = false
		}
		b.WriteRune(r)
	}
	return b.String()
}
