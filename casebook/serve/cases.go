package serve

import (
	"fmt"
	"go/version"
	"maps"
	"net/http"
	"slices"
	"sort"
	"strings"
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
	// AlsoTop3 lists classes the bad variant must also show among its first
	// three findings: a second, smaller problem in the same service.
	AlsoTop3 []string
	// Below maps a symptom class to the class of its cause: when the bad
	// variant reports the symptom at all, it must rank below the cause.
	Below map[string]string
	// FixedKeeps maps a class the fixed variant still shows to why: a fix
	// that cuts the cost per unit of work while that work remains the
	// service's whole job (verify measures the gain), or a pattern both
	// variants share that the case is not about. The fixed variant is held
	// to everything else.
	FixedKeeps map[string]string
	// Concurrency is the number of closed-loop load workers the end-to-end
	// tests use (0: their default). A control saturated by many connections
	// sets it.
	Concurrency int
	// ProofFrom maps a Go version to the evidence (a fact's name) the bad
	// variant's top finding must cite when the service is built with that
	// Go or a newer one: a runtime feature the newer Go adds must be read,
	// not only the older paths (Go 1.27's goroutine leak profile).
	ProofFrom map[string]string
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

// Want is what a diagnosis of the variant must show, as a want.txt for
// perfdoctor's rule test harness (rules/ruletest), for a service built with
// goVersion (ProofFrom asks more of newer ones). On the bad variant the top
// finding must be the case's class at high severity, each of AlsoTop3 must
// be among the first three problems, and each symptom of Below that is
// reported must rank after its cause. The fixed variant must not show the
// class above low, nor anything at high (FixedKeeps aside). A case without
// a class is a healthy control: nothing above low on either variant. Never
// holds on both.
func (c Case) Want(variant, goVersion string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# casebook %s, %s variant: %s\n", c.Name, variant, c.Title)
	if c.Never != "" {
		fmt.Fprintf(&b, "never %s\n", c.Never)
	}
	if c.Class == "" || variant != "bad" {
		class := c.Class
		if class == "" {
			// A control; with Never, a case of what that class must not be
			// mistaken for, whose own symptoms may show at medium.
			class = c.Never
		}
		if class == "" {
			b.WriteString("below medium\n")
			return b.String()
		}
		if c.FixedKeeps[class] == "" {
			fmt.Fprintf(&b, "never %s medium\n", class)
		}
		b.WriteString("below high")
		if variant == "fixed" && len(c.FixedKeeps) > 0 {
			b.WriteString(" except")
			for _, k := range slices.Sorted(maps.Keys(c.FixedKeeps)) {
				b.WriteString(" " + k)
			}
		}
		b.WriteString("\n")
		for _, k := range slices.Sorted(maps.Keys(c.FixedKeeps)) {
			fmt.Fprintf(&b, "# %s may stay: %s\n", k, c.FixedKeeps[k])
		}
		return b.String()
	}
	fmt.Fprintf(&b, "top %s high", c.Class)
	for _, since := range slices.Sorted(maps.Keys(c.ProofFrom)) {
		if version.Compare(goVersion, since) >= 0 {
			fmt.Fprintf(&b, " %q", c.ProofFrom[since])
		}
	}
	b.WriteString("\n")
	for _, class := range c.AlsoTop3 {
		fmt.Fprintf(&b, "top3 %s\n", class)
	}
	for _, symptom := range slices.Sorted(maps.Keys(c.Below)) {
		fmt.Fprintf(&b, "after %s %s\n", symptom, c.Below[symptom])
	}
	return b.String()
}
