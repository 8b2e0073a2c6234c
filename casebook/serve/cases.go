package serve

import (
	"fmt"
	"net/http"
	"sort"
)

// Case is one casebook reproduction that Start can serve.
type Case struct {
	Name  string // as given to -case, e.g. "d1"
	Class string // the finding class the bad variant must produce
	Title string
	// Pending, when set, says why the rules cannot yet pass this case end to
	// end. The e2e test skips it with this reason and the scorecard lists it
	// as a known gap, so it stays visible until a rule change clears it.
	Pending string
	// Never is a class neither variant may report at any severity: a
	// backlog that drains must not be called a goroutine leak.
	Never string
	// Build returns the variant's handler and an optional cleanup. It may
	// change process-wide settings (GC, GOMAXPROCS): one service per process.
	Build func(variant string, o Options) (http.Handler, func() error, error)
}

var registry = map[string]Case{}

// Register adds a case; each case's file registers itself from init.
func Register(c Case) {
	if _, dup := registry[c.Name]; dup {
		panic(fmt.Sprintf("serve: case %q registered twice", c.Name))
	}
	registry[c.Name] = c
}

// Cases lists the registered case names, sorted.
func Cases() []string {
	names := make([]string, 0, len(registry))
	for n := range registry {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Lookup returns a registered case.
func Lookup(name string) (Case, bool) {
	c, ok := registry[name]
	return c, ok
}
