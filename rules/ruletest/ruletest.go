// Package ruletest runs rules over recorded evidence and checks what they
// find against expectations written next to it, in the spirit of
// go/analysis's analysistest: a case is a folder (a bundle, or a folder of
// profiles) under testdata/ holding a want.txt, and the test is fixture in,
// findings out. The casebook's recorded bundles and the real-server corpus
// are checked the same way.
//
// want.txt holds one expectation a line ('#' starts a comment); RULE is a
// rule ID (GC001) or a finding class (gc-pressure), SEV one of info, low,
// medium, high, and TEXT a double-quoted string the finding's summary, fix
// or evidence must carry (case-insensitive), or with a leading ! must not:
//
//	top RULE [SEV] [TEXT...]     the first finding is RULE, at SEV or above, carrying every TEXT
//	top3 RULE                    RULE is among the first three problems (symptoms, ranked under
//	                             their cause, do not count)
//	fires RULE [SEV] [TEXT...]   some finding is RULE, at SEV or above, carrying every TEXT
//	never RULE [SEV]             no finding is RULE (at SEV or above, when given)
//	after SYMPTOM CAUSE          SYMPTOM, when reported at all, ranks after CAUSE
//	below SEV [except RULE...]   every finding (but those named) is below SEV (healthy: below medium)
//	count N                      exactly N findings
//	none                         no finding at all
//	notchecked RULE [TEXT]       RULE was not checked, for a reason carrying TEXT
package ruletest

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/facts"
	"github.com/perfdoctor/perfdoctor/rules"
)

// WantFile names a case's expectations.
const WantFile = "want.txt"

// Expectation is one line of want.txt.
type Expectation struct {
	Line int
	Verb string // top, top3, fires, never, after, below, count, none, notchecked
	Rule string // a rule ID or a class
	// Other is after's cause, or below's exceptions.
	Other []string
	Min   rules.Severity
	// HasMin says a severity was given (never RULE alone means at any).
	HasMin bool
	Texts  []string
	Count  int
}

func (e Expectation) String() string {
	s := e.Verb
	if e.Verb == "count" {
		return s + " " + strconv.Itoa(e.Count)
	}
	if e.Rule != "" {
		s += " " + e.Rule
	}
	if e.Verb == "after" {
		return s + " " + e.Other[0]
	}
	if e.HasMin {
		s += " " + e.Min.String()
	}
	if len(e.Other) > 0 {
		s += " except " + strings.Join(e.Other, " ")
	}
	for _, t := range e.Texts {
		s += " " + strconv.Quote(t)
	}
	return s
}

// Parse reads want.txt.
func Parse(r io.Reader) ([]Expectation, error) {
	var out []Expectation
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		words, err := split(sc.Text())
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		if len(words) == 0 {
			continue
		}
		e := Expectation{Line: n, Verb: words[0]}
		args := words[1:]
		switch e.Verb {
		case "none":
			if len(args) > 0 {
				return nil, fmt.Errorf("line %d: none takes nothing", n)
			}
		case "count":
			if len(args) != 1 {
				return nil, fmt.Errorf("line %d: count takes a number", n)
			}
			if e.Count, err = strconv.Atoi(args[0]); err != nil || e.Count < 0 {
				return nil, fmt.Errorf("line %d: count %s is not a number of findings", n, args[0])
			}
		case "below":
			if len(args) == 0 || len(args) == 2 || (len(args) > 2 && args[1] != "except") {
				return nil, fmt.Errorf("line %d: below takes a severity, then optionally except and rules", n)
			}
			if err := e.Min.UnmarshalText([]byte(args[0])); err != nil {
				return nil, fmt.Errorf("line %d: %w", n, err)
			}
			e.HasMin = true
			if len(args) > 2 {
				e.Other = args[2:]
			}
		case "top3":
			if len(args) != 1 {
				return nil, fmt.Errorf("line %d: top3 takes a rule ID or class", n)
			}
			e.Rule = args[0]
		case "after":
			if len(args) != 2 {
				return nil, fmt.Errorf("line %d: after takes a symptom and its cause", n)
			}
			e.Rule, e.Other = args[0], args[1:]
		case "top", "fires", "never", "notchecked":
			if len(args) == 0 || strings.HasPrefix(args[0], `"`) {
				return nil, fmt.Errorf("line %d: %s needs a rule ID or class", n, e.Verb)
			}
			e.Rule, args = args[0], args[1:]
			if len(args) > 0 && !strings.HasPrefix(args[0], `"`) && e.Verb != "notchecked" {
				if err := e.Min.UnmarshalText([]byte(args[0])); err != nil {
					return nil, fmt.Errorf("line %d: %w", n, err)
				}
				e.HasMin, args = true, args[1:]
			}
			for _, a := range args {
				t, err := strconv.Unquote(a)
				if err != nil {
					return nil, fmt.Errorf("line %d: %s is not a quoted text", n, a)
				}
				e.Texts = append(e.Texts, t)
			}
			if e.Verb == "never" && len(e.Texts) > 0 {
				return nil, fmt.Errorf("line %d: never takes no text", n)
			}
		default:
			return nil, fmt.Errorf("line %d: unknown expectation %q (want top, top3, fires, never, after, below, count, none or notchecked)", n, e.Verb)
		}
		out = append(out, e)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no expectations")
	}
	return out, nil
}

// split cuts a line into words, a double-quoted string being one word
// (kept quoted), up to a '#' outside quotes.
func split(line string) ([]string, error) {
	var out []string
	for line = strings.TrimSpace(line); line != "" && line[0] != '#'; line = strings.TrimSpace(line) {
		if line[0] != '"' {
			i := strings.IndexAny(line, " \t")
			if i < 0 {
				i = len(line)
			}
			out = append(out, line[:i])
			line = line[i:]
			continue
		}
		q, err := strconv.QuotedPrefix(line)
		if err != nil {
			return nil, fmt.Errorf("unterminated text in %s", line)
		}
		out = append(out, q)
		line = line[len(q):]
	}
	return out, nil
}

// Violations lists how res breaks the expectations; none when it keeps them.
func Violations(res rules.Result, want []Expectation) []string {
	var out []string
	for _, e := range want {
		if v := violation(res, e); v != "" {
			out = append(out, fmt.Sprintf("want.txt:%d: %s: %s", e.Line, e, v))
		}
	}
	return out
}

func violation(res rules.Result, e Expectation) string {
	fs := res.Findings
	switch e.Verb {
	case "none":
		if len(fs) > 0 {
			return "found " + list(fs)
		}
	case "count":
		if len(fs) != e.Count {
			return "found " + list(fs)
		}
	case "below":
		for _, f := range fs {
			if f.Severity >= e.Min && !slices.ContainsFunc(e.Other, func(r string) bool { return is(f, r) }) {
				return fmt.Sprintf("%s (%s) is %s", f.ID, f.Class, f.Severity)
			}
		}
	case "top":
		if len(fs) == 0 {
			return "no findings"
		}
		if why := mismatch(fs[0], e); why != "" {
			return "the top finding " + why + "; found " + list(fs)
		}
	case "top3":
		// Problems only: a symptom is shown under its cause.
		rank := 0
		for _, f := range fs {
			if f.CausedBy != "" {
				continue
			}
			if is(f, e.Rule) {
				if rank > 2 {
					return fmt.Sprintf("ranks %d among the problems; found %s", rank+1, list(fs))
				}
				return ""
			}
			rank++
		}
		return "absent; found " + list(fs)
	case "after":
		symptom, cause := rankOf(fs, e.Rule), rankOf(fs, e.Other[0])
		if symptom >= 0 && (cause < 0 || symptom < cause) {
			c := "absent"
			if cause >= 0 {
				c = strconv.Itoa(cause + 1)
			}
			return fmt.Sprintf("the symptom ranks %d, above its cause (rank %s); found %s", symptom+1, c, list(fs))
		}
	case "fires":
		var whys []string
		for _, f := range fs {
			why := mismatch(f, e)
			if why == "" {
				return ""
			}
			if is(f, e.Rule) {
				whys = append(whys, why)
			}
		}
		if len(whys) > 0 {
			return strings.Join(whys, "; ")
		}
		return "no such finding; found " + list(fs)
	case "never":
		for _, f := range fs {
			if is(f, e.Rule) && (!e.HasMin || f.Severity >= e.Min) {
				return fmt.Sprintf("found %s at %s: %s", f.ID, f.Severity, f.Summary)
			}
		}
	case "notchecked":
		for _, nc := range res.NotChecked {
			if nc.Rule == e.Rule || nc.Class == e.Rule {
				if len(e.Texts) == 0 || containsFold(nc.Reason, e.Texts[0]) {
					return ""
				}
				return "not checked for another reason: " + nc.Reason
			}
		}
		return "it was checked"
	}
	return ""
}

// mismatch says why f does not meet e, or "" when it does.
func mismatch(f rules.Finding, e Expectation) string {
	if !is(f, e.Rule) {
		return fmt.Sprintf("is %s (%s), not %s", f.ID, f.Class, e.Rule)
	}
	if e.HasMin && f.Severity < e.Min {
		return fmt.Sprintf("%s is %s, below %s", f.ID, f.Severity, e.Min)
	}
	text := f.Summary + "\n" + f.Fix + "\n" + f.Example
	for _, x := range f.Evidence {
		text += "\n" + x.Name + " " + x.Value
	}
	for _, t := range e.Texts {
		if absent, ok := strings.CutPrefix(t, "!"); ok {
			if containsFold(text, absent) {
				return fmt.Sprintf("%s says %q", f.ID, absent)
			}
			continue
		}
		if !containsFold(text, t) {
			return fmt.Sprintf("%s does not say %q (summary: %s)", f.ID, t, f.Summary)
		}
	}
	return ""
}

func is(f rules.Finding, rule string) bool { return f.Rule == rule || f.Class == rule }

// rankOf is the 0-based rank of the first finding that is rule, -1 if none.
func rankOf(fs []rules.Finding, rule string) int {
	return slices.IndexFunc(fs, func(f rules.Finding) bool { return is(f, rule) })
}

func containsFold(s, sub string) bool {
	return strings.Contains(strings.ToLower(s), strings.ToLower(sub))
}

func list(fs []rules.Finding) string {
	if len(fs) == 0 {
		return "nothing"
	}
	parts := make([]string, len(fs))
	for i, f := range fs {
		parts[i] = fmt.Sprintf("%s %s %s", f.ID, f.Class, f.Severity)
	}
	return strings.Join(parts, ", ")
}

// Diagnose loads the case at dir and runs rs over it, failing t when a rule
// changes the evidence: evidence is a value every rule reads alike.
func Diagnose(t testing.TB, dir string, rs []*rules.Rule) (*evidence.Evidence, rules.Result) {
	t.Helper()
	ev, err := evidence.Load(context.Background(), evidence.LoadOptions{}, dir)
	if err != nil {
		t.Fatalf("%s: %v", dir, err)
	}
	before := Fingerprint(ev)
	res := rules.Run(facts.New(ev), rs)
	if after := Fingerprint(ev); after != before {
		t.Errorf("%s: the rules changed the evidence they read", dir)
	}
	return ev, res
}

// Expect diagnoses the bundle at dir with rs and holds the result to want,
// expectations written as in a want.txt: for bundles kept elsewhere (the
// real-server corpus) whose expectations belong to one rule's test.
func Expect(t *testing.T, dir string, rs []*rules.Rule, want string) rules.Result {
	t.Helper()
	exp, err := Parse(strings.NewReader(want))
	if err != nil {
		t.Fatalf("%s: %v", dir, err)
	}
	_, res := Diagnose(t, dir, rs)
	for _, v := range Violations(res, exp) {
		t.Errorf("%s: %s", dir, v)
	}
	return res
}

// Run checks each case folder under dir holding a want.txt (every one, or
// those named) with the rules rs, each as a subtest named after the
// folder. It returns the results by case, for tests that look further.
func Run(t *testing.T, dir string, rs []*rules.Rule, cases ...string) map[string]rules.Result {
	t.Helper()
	if len(cases) == 0 {
		ents, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range ents {
			if _, err := os.Stat(filepath.Join(dir, e.Name(), WantFile)); e.IsDir() && err == nil {
				cases = append(cases, e.Name())
			}
		}
		if len(cases) == 0 {
			t.Fatalf("no case with a %s under %s", WantFile, dir)
		}
	}
	out := map[string]rules.Result{}
	for _, c := range cases {
		t.Run(c, func(t *testing.T) {
			path := filepath.Join(dir, c)
			want, err := ReadWant(path)
			if err != nil {
				t.Fatal(err)
			}
			_, res := Diagnose(t, path, rs)
			out[c] = res
			for _, v := range append(Violations(res, want), Whole(res.Findings)...) {
				t.Error(v)
			}
		})
	}
	return out
}

// Whole lists what makes a diagnosis unsignable as a whole, whatever the
// case: CPU impacts adding up to more than 100% (a cost counted twice), and
// a symptom ranked above the finding that explains it, or without it. Run
// fails each case on them; the casebook's live runs check the same.
func Whole(fs []rules.Finding) []string {
	var out []string
	var cpu float64
	at := map[string]int{}
	for i, f := range fs {
		at[f.ID] = i
		if f.Resource == "cpu" {
			cpu += f.Impact
		}
	}
	if cpu > 1+1e-9 {
		out = append(out, fmt.Sprintf("CPU impacts sum to %.2f, above 1: a cost is counted more than once", cpu))
	}
	for i, f := range fs {
		if c, ok := at[f.CausedBy]; f.CausedBy != "" && (!ok || c > i) {
			out = append(out, fmt.Sprintf("%s ranks %d, above or without its cause %s", f.ID, i+1, f.CausedBy))
		}
	}
	return out
}

// ReadWant reads the want.txt of the case at dir.
func ReadWant(dir string) ([]Expectation, error) {
	f, err := os.Open(filepath.Join(dir, WantFile))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	want, err := Parse(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", f.Name(), err)
	}
	return want, nil
}

// Fingerprint is a digest of everything evidence holds, to tell whether a
// reader changed it.
func Fingerprint(ev *evidence.Evidence) string {
	h := sha256.New()
	kinds := make([]string, 0, len(ev.Profiles))
	for k := range ev.Profiles {
		kinds = append(kinds, string(k))
	}
	slices.Sort(kinds)
	for _, k := range kinds {
		var b bytes.Buffer
		if err := ev.Profiles[evidence.Kind(k)].WriteUncompressed(&b); err == nil {
			fmt.Fprintf(h, "%s %d\n", k, b.Len())
			h.Write(b.Bytes())
		}
	}
	parts := []any{ev.Sources, ev.Manifest, ev.MetricsStart, ev.MetricsEnd, ev.SystemStart, ev.SystemEnd, ev.Load,
		ev.Files, ev.TraceSummary, ev.GCTrace, ev.JVM, ev.GoroutineStacks}
	for _, p := range parts {
		b, _ := json.Marshal(p)
		h.Write(b)
	}
	return fmt.Sprintf("%x", h.Sum(nil))
}

// CorpusCheck holds one rule to every recorded scenario of the real-server
// corpus (a folder under Root holding scenario.json and its bad/ bundle).
type CorpusCheck struct {
	Root  string
	Rules []*rules.Rule
	// Class is the rule's finding class: a scenario whose truth names it
	// must be listed in Want.
	Class string
	// Want holds the expectations per scenario, want.txt-style; a scenario
	// not listed must get no finding.
	Want map[string]string
	// EveryFixedQuiet holds every kept fixed/ bundle to no finding; else
	// only those of scenarios whose truth names Class (a fix for another
	// class may leave this rule's cost as it was).
	EveryFixedQuiet bool
}

// Corpus runs c, each scenario as a subtest named after its folder.
func Corpus(t *testing.T, c CorpusCheck) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(c.Root, "*", "scenario.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no corpus scenarios under %s: %v", c.Root, err)
	}
	for _, file := range files {
		dir := filepath.Dir(file)
		name := filepath.Base(dir)
		t.Run(name, func(t *testing.T) {
			if _, err := os.Stat(filepath.Join(dir, "bad")); errors.Is(err, fs.ErrNotExist) {
				t.Skip("not recorded yet")
			}
			var sc struct {
				Truth struct {
					Classes []string `json:"classes"`
				} `json:"truth"`
			}
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(data, &sc); err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			ours := slices.Contains(sc.Truth.Classes, c.Class)
			want, listed := c.Want[name]
			if !listed {
				if ours {
					t.Fatalf("its truth names %s: say in the test's expectations what the rule must report", c.Class)
				}
				want = "none"
			}
			Expect(t, filepath.Join(dir, "bad"), c.Rules, want)
			if _, err := os.Stat(filepath.Join(dir, "fixed")); err == nil && (ours || c.EveryFixedQuiet) {
				if _, res := Diagnose(t, filepath.Join(dir, "fixed"), c.Rules); len(res.Findings) != 0 {
					t.Errorf("fixed: %s", res.Findings[0].Summary)
				}
			}
		})
	}
}
