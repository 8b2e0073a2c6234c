package layout

import (
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

const module = "github.com/perfdoctor/perfdoctor/"

// rule forbids packages matching From to depend, directly or not (only
// directly with Direct), on packages matching To, except those in Except.
type rule struct {
	From, To []string // import-path prefixes, relative to the module for perfdoctor's own
	Except   []string
	Direct   bool
	Why      string
}

var rules = []rule{
	{From: []string{"rules/"}, To: []string{"collect", "report", "load", "agent", "cmd/", "verify", "underload"},
		Why: "a rule reads evidence and writes findings; how evidence is gathered or shown is not its business"},
	{From: []string{"collect"}, To: []string{"evidence", "rules", "report"},
		Why: "collect writes bundles that evidence reads; the format parsers both use live in formats/"},
	{From: []string{"formats"}, To: []string{"evidence", "rules", "report", "collect", "load", "agent"},
		Why: "format parsers turn other tools' files into the profile model; they know nothing of who reads them"},
	{From: []string{"agent"}, To: []string{"cmd/", "report", "load", "collect", "evidence", "rules", "casebook"},
		Why: "the agent is linked into users' services: no CLI, report or load generator in it"},
	{From: []string{"cmd/perfdoctor"}, To: []string{"casebook", "github.com/IBM/sarama", "github.com/apache/thrift", "github.com/prometheus/client_golang"},
		Why: "the shipped binary carries no casebook service or its libraries"},
	{From: []string{"evidence"}, To: []string{"rules", "report", "collect", "load", "agent"},
		Why: "evidence is read by rules and reports, never the reverse"},
	{From: []string{"bundle"}, To: []string{""}, Except: []string{"internal/output"},
		Why: "the bundle format is the contract between producers and readers: it depends on no perfdoctor package (but writes files the one safe way)"},
	{From: []string{"internal/output"}, To: []string{""},
		Why: "writing a user-named file safely is a leaf every writer uses: it depends on no perfdoctor package"},
	{From: []string{"load"}, To: []string{"evidence", "rules", "report", "collect"},
		Why: "the load generator knows nothing of diagnosis"},
	{From: []string{"report"}, To: []string{"agent", "rules/catalog"},
		Why: "reports render what they are given, including the catalog"},
	{From: []string{"report"}, To: []string{"collect"}, Direct: true,
		Why: "reports render evidence; they never gather it"},
	{From: []string{"facts"}, To: []string{"rules", "report", "collect", "load", "agent", "diagnose", "cmd/"},
		Why: "facts are readings of the evidence that rules and reports share: they know nothing of either"},
	{From: []string{"evidence"}, To: []string{"facts"},
		Why: "evidence is what was read; facts are computed from it, never the reverse"},
}

// ruleID matches a rule's own package (rules/gc001): one rule per package.
var ruleID = regexp.MustCompile(`^rules/[a-z]+[0-9]{3}$`)

// TestWallsAroundRules: no rule imports another (a shared reading is a
// fact, a shared family of frames is facts/frames), and no reporter imports
// a rule (it renders findings; it does not analyse).
func TestWallsAroundRules(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}}|{{join .Deps \" \"}}", module+"...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	rulePkgs := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		pkg, deps, _ := strings.Cut(line, "|")
		pkg = strings.TrimPrefix(pkg, module)
		isRule := ruleID.MatchString(pkg)
		if isRule {
			rulePkgs++
		}
		isReport := matches(pkg, []string{"report"})
		if !isRule && !isReport {
			continue
		}
		for _, dep := range strings.Fields(deps) {
			dep, own := strings.CutPrefix(dep, module)
			if !own || !ruleID.MatchString(dep) || dep == pkg {
				continue
			}
			if isRule {
				t.Errorf("rule %s imports rule %s: rules are independent; share a fact (facts/) or a family of frames (facts/frames) instead", pkg, dep)
			} else {
				t.Errorf("report package %s imports rule %s: a reporter renders findings and facts, it does not analyse", pkg, dep)
			}
		}
	}
	if rulePkgs < 10 {
		t.Fatalf("only %d rule packages found: the pattern checks nothing", rulePkgs)
	}
}

func TestImportRules(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}}|{{join .Imports \" \"}}|{{join .Deps \" \"}}", module+"...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	checked := map[int]int{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Split(line, "|")
		pkg, imports, deps := strings.TrimPrefix(fields[0], module), strings.Fields(fields[1]), strings.Fields(fields[2])
		for i, r := range rules {
			if !matches(pkg, r.From) {
				continue
			}
			checked[i]++
			list := deps
			if r.Direct {
				list = imports
			}
			for _, dep := range list {
				own := strings.HasPrefix(dep, module)
				dep = strings.TrimPrefix(dep, module)
				if own && matches(dep, r.Except) {
					continue
				}
				if (own && matches(dep, r.To) && !strings.HasPrefix(dep, pkg)) || (!own && matchesExternal(dep, r.To)) {
					t.Errorf("%s depends on %s: %s", pkg, dep, r.Why)
				}
			}
		}
	}
	for i, r := range rules {
		if checked[i] == 0 {
			t.Errorf("no package matches %v: the rule checks nothing", r.From)
		}
	}
}

// matches reports whether the module-relative path pkg is one of prefixes
// or under one ("" matches every package of the module).
func matches(pkg string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.Contains(p, ".") { // an external module
			continue
		}
		if p == "" || pkg == strings.TrimSuffix(p, "/") || strings.HasPrefix(pkg, strings.TrimSuffix(p, "/")+"/") ||
			(strings.HasSuffix(p, "/") && strings.HasPrefix(pkg, p)) {
			return true
		}
	}
	return false
}

func matchesExternal(dep string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.Contains(p, ".") && (dep == p || strings.HasPrefix(dep, p+"/")) {
			return true
		}
	}
	return false
}

func TestMatches(t *testing.T) {
	for _, c := range []struct {
		pkg  string
		pre  []string
		want bool
	}{
		{"collect", []string{"collect"}, true},
		{"collect/jvm", []string{"collect"}, true},
		{"collector", []string{"collect"}, false},
		{"rules/gc001", []string{"rules/"}, true},
		{"rules", []string{"rules/"}, true},
		{"evidence/jfr", []string{"evidence/perfscript", "evidence/jfr"}, true},
		{"evidence", []string{"evidence/perfscript", "evidence/jfr"}, false},
		{"anything", []string{""}, true},
	} {
		if got := matches(c.pkg, c.pre); got != c.want {
			t.Errorf("matches(%q, %v) = %v", c.pkg, c.pre, got)
		}
	}
}
