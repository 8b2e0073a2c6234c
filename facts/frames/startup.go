package frames

import (
	"regexp"
	"strings"
)

// Startup is code that runs once: package initialisers (Go's init
// functions and their closures, Java's <clinit>) and sync.Once. Work under
// it is done once by definition, never per request.
func Startup(fn string) bool {
	return strings.HasPrefix(fn, "runtime.doInit") || strings.HasPrefix(fn, "sync.(*Once).doSlow") || strings.HasPrefix(fn, "sync.OnceValue") ||
		strings.HasPrefix(fn, "sync.OnceFunc") || goInit.MatchString(fn) || strings.HasSuffix(fn, ".<clinit>")
}

// goInit matches package initialisers and their closures: "pkg.init",
// "pkg.init.0", "pkg.init.0.func1"; not methods named init ("pkg.(*T).init").
var goInit = regexp.MustCompile(`^[^()]*\.init(\.\d+)?(\.func\d+.*)?$`)
