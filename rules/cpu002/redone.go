// Package cpu002 names work the program redoes for every request when it
// could be done once, cached or made incremental (finding class
// redone-work): a template parsed, a router built, a password hashed or a
// whole collection gathered per request.
package cpu002

import (
	"fmt"
	"strings"
	"time"

	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/facts"
	"github.com/perfdoctor/perfdoctor/internal/human"
	"github.com/perfdoctor/perfdoctor/rules"
)

// Rule is CPU002.
var Rule = &rules.Rule{
	ID:    "CPU002",
	Class: "redone-work",
	Doc: rules.Doc{
		Title: "Work that could be done once is redone for every request",
		Text: `Some work is meant to be done once and kept: a template parsed, a router or a
validator built, TLS roots loaded; a password verified (its hash is slow by
design, so a credential presented again need not be hashed again); a summary
of a collection kept up to date as it changes; a row found through an index.
Redone for every request it is often most of the CPU, and the fix removes it
rather than speeding it up: parse at start-up, cache the verified credential,
check or update only what the request changed, create the index. The work
usually sits in a library (template, crypto, a metrics registry, a database
engine) while the cause is the program's calling pattern, so the prescription
goes to the program's frame that makes the call.`,
		Evidence: `The CPU profile. A sample is redone work when a family's function is on its
stack, not under initialisation (init functions, sync.Once, Java <clinit>) and
not under what makes that work the unit's own job (a metrics scrape gathers
the registry by definition). Families: library calls meant to be made once
(template Parse/ParseFiles and html/template's escaping, router registration
in net/http, gorilla/mux, chi, httprouter, gin and echo, validator, JSON schema,
zap and jsoniter construction, Jackson's ObjectMapper, JAXBContext and XSLT
templates, TLS roots and key pairs, regcomp); password hashing (PBKDF2, bcrypt,
scrypt, argon2 in Go, the JDK, Spring Security, Bouncy Castle, OpenSSL,
libxcrypt, libsodium); a metrics registry gathered outside a scrape; and,
matched by shape, a collection sorted or iterated whole (sort and map
iteration in Go, the JDK's sorts and map iterators, qsort and std::sort).
Regular expressions compiled per call in Go, Java and PCRE are LIB007's, and
tables scanned per query DB001's.

Thresholds, from the CPU profiles of the corpus and the casebook: named
families report from 3% of CPU (on every healthy server measured: Jetty
serving a static file, Tomcat rendering a JSP, ZooKeeper reading with a roomy
and a tight heap, the casebook's fixed variants and its control, they hold
0%; where they are the problem, 34-41% for a template, 99% for PBKDF2, 86%
for the pushgateway's gather); the shape-matched family
needs 30% (healthy servers and the casebook's fixed variants sort and iterate
at most 2.5%, the casebook's bad variants of other classes at most 6.2%, the
corpus's other problems 1.2%; a store checked whole per write holds 45-49%).
Severity follows the share the fix removes: high from 20%, medium from 8%. The impact is all of the
redone work, since doing it once removes it; for a whole collection it ranges
from the matched sort or gather to the whole subtree of the program's frame
that makes the pass (appending and copying every item too: the fresh store's
sort holds 49% of CPU, its checkWhole 79%).`,
		Fix: `Do the work once and keep the result. Templates, routers, validators, codecs and
TLS configuration: build them at start-up (a package-level variable, a field
set in main, a static final in Java) and use them per request. Password
hashes: when the same credentials come with every request (basic auth, API
keys stored as password hashes), remember the verified ones for a while,
keyed by a keyed hash of the presented secret (HMAC-SHA-256 with a per-process
key), or exchange them once for a session token. A whole collection gathered
per request: check or update only the part the request changed, keep the
summary up to date as items change, or do the whole pass on a timer.`,
		Before:  `func page(w http.ResponseWriter, r *http.Request) { t := template.Must(template.ParseFiles("page.html")); t.Execute(w, data(r)) }`,
		After:   `var page = template.Must(template.ParseFiles("page.html"))  // once, at start-up`,
		Caveats: `The profile shows that the work is done per request, not that its result is the same each time: a template chosen from user input, a password that differs per request (a login endpoint, where hashing is the job), or a collection that must be consistent at each write need a cache keyed by what varies, or the work is the job.`,
		Since:   "0.2",
	},
	Needs: []rules.Input{rules.CPU},
	Uses:  []rules.Input{rules.Allocs},
	Facts: []facts.Key{facts.CPUStacks, facts.AllocStacks, facts.Program, facts.DominantPath, facts.Owners, facts.WorkDone},
	Check: check,
}

const (
	// minShare is the share of CPU from which a named family is reported:
	// it is 0% on every healthy server and fixed variant measured.
	minShare = 0.03
	// minGeneric is the share from which sorting and iterating collections
	// whole is reported: healthy servers do it up to 2.5% of CPU, the
	// casebook's bad variants of other classes up to 6.2%.
	minGeneric = 0.30
	// underPath is the part of a family's samples under the dominant path
	// from which the finding describes the path as where the work runs.
	underPath = 0.5
)

func check(pass *rules.Pass) error {
	if !pass.EnoughCPU() {
		return nil
	}
	cpu := facts.Get(pass.Facts, facts.CPUStacks)
	prog := facts.Get(pass.Facts, facts.Program)
	own := prog.Frames(cpu)
	matches := classify(cpu)
	for fi := range families {
		fam := &families[fi]
		in := func(s evidence.Sample) bool { return matches.of(s) == fi }
		share := cpu.ShareWhere(in)
		if share < minShare || fam.generic && share < minGeneric {
			continue
		}
		pass.Report(finding(pass, fam, fi, matches, cpu, prog, own, share))
	}
	return nil
}

// matching is which family, if any, each sample's redone work belongs to.
type matching struct {
	st   *evidence.Stacks
	hits [][]bool // per family, per frame
	job  [][]bool
	init []bool
}

func classify(st *evidence.Stacks) *matching {
	m := &matching{st: st, init: st.FrameHits(startup)}
	for _, f := range families {
		m.hits = append(m.hits, st.FrameHits(f.frames))
		var job []bool
		if f.job != nil {
			job = st.FrameHits(f.job)
		}
		m.job = append(m.job, job)
	}
	return m
}

// of is the family of a sample's outermost family frame, or -1 when it
// has none or the work is done once or is the unit's job.
func (m *matching) of(s evidence.Sample) int {
	best, at := -1, -1
	for i, id := range s.Frames {
		if m.init[id] {
			return -1
		}
		for fi, hit := range m.hits {
			if hit[id] {
				best, at = fi, i
			}
		}
	}
	if best < 0 {
		return -1
	}
	if job := m.job[best]; job != nil {
		for _, id := range s.Frames[at:] {
			if job[id] {
				return -1
			}
		}
	}
	return best
}

// outermost is the index in s.Frames of the family's outermost frame.
func (m *matching) outermost(s evidence.Sample, fi int) int {
	at := -1
	for i, id := range s.Frames {
		if m.hits[fi][id] {
			at = i
		}
	}
	return at
}

func finding(pass *rules.Pass, fam *family, fi int, m *matching, cpu *evidence.Stacks, prog *facts.ProgramCode, own []bool, share float64) rules.Finding {
	in := func(s evidence.Sample) bool { return m.of(s) == fi }
	// The program's frame that makes the call decides whose change the
	// fix is: the first own frame rootward of the family's outermost one.
	callerOf := func(s evidence.Sample) *evidence.Frame {
		at := m.outermost(s, fi)
		for _, id := range s.Frames[at+1:] {
			if own[id] {
				return &cpu.Frames[id]
			}
		}
		for _, id := range s.Frames[at+1:] {
			if prog.Application(cpu.Frames[id]) {
				return &cpu.Frames[id] // a library or framework the program runs on makes the call
			}
		}
		return nil
	}
	calls := cpu.TopSites(3, func(s evidence.Sample) *evidence.Frame {
		if !in(s) {
			return nil
		}
		return callerOf(s)
	})
	called := cpu.TopSites(3, func(s evidence.Sample) *evidence.Frame {
		if !in(s) {
			return nil
		}
		return &cpu.Frames[s.Frames[m.outermost(s, fi)]]
	})
	work := facts.Get(pass.Facts, facts.WorkDone)
	path := facts.Get(pass.Facts, facts.DominantPath)
	underShare := 0.0
	if path != nil {
		underShare = cpu.ShareWhere(func(s evidence.Sample) bool { return in(s) && path.Under(s) }) / share
	}

	name := rules.ShortFunc
	if path != nil {
		name = path.Name
	}
	what := fam.name
	if len(called) > 0 {
		what += " (" + name(called[0].Func) + ")"
	}
	where := ""
	switch {
	case path != nil && underShare >= underPath:
		where = path.ChainText() + " (" + human.Percent(path.Share) + ")"
		if len(called) > 0 {
			where = path.ChainTo(called[0].Func)
		}
	case len(calls) > 0 && len(called) > 0:
		where = name(calls[0].Func) + " -> " + name(called[0].Func)
	}
	unit := "request"
	if work.Unit != "" {
		unit = work.Unit
	}
	summary := fmt.Sprintf("%s is redone for every %s: %s of CPU", capitalise(what), unit, human.Percent(share))
	if where != "" {
		summary += " under " + where
	}

	f := rules.Finding{
		Severity:    rules.SeverityFor(share),
		Impact:      share,
		RemovesWork: true, // done once, cached or turned off, it is done no more per request
		Resource:    "cpu",
		ImpactBasis: basis(fam.kind),
		Summary:     summary,
		Evidence:    []rules.Fact{rules.Share(fam.name+", share of CPU", share)},
		Example:     pass.Rule.Doc.Before + "\n->\n" + pass.Rule.Doc.After,
		Caveats:     []string{pass.Rule.Doc.Caveats},
		Locations:   append(rules.Locations(calls, "the program's call"), rules.Locations(called, "redone work")...),
		Frames:      cpu.Matched(fam.frames, 12),
	}
	if fam.kind != setup {
		f.Example = ""
	}
	if path != nil {
		f.Evidence = append(f.Evidence, rules.Text("dominant path", path.Text()))
		if underShare > 0 {
			f.Evidence = append(f.Evidence, rules.Share("of it under the dominant path", underShare))
		}
	}
	if work.CPUPerUnit > 0 {
		per := time.Duration(float64(work.CPUPerUnit) * share)
		f.Evidence = append(f.Evidence, rules.Text("CPU per "+unit+" in it", fmt.Sprintf("%s of %s", human.RoundDuration(per), human.RoundDuration(work.CPUPerUnit))))
	}
	if fam.kind == gather && len(calls) > 0 {
		// The program's frame that gathers the collection does more of
		// the same pass than the matched sort or gather (appending every
		// item, copying, comparing): checking only what the request
		// changed removes the frame's whole pass, so the fix recovers
		// between the matched work and all of the frame's subtree.
		caller := calls[0].Func
		onStack, atInit := cpu.Has(func(fn string) bool { return fn == caller }), cpu.Has(startup)
		whole := cpu.ShareWhere(func(s evidence.Sample) bool { return onStack(s) && !atInit(s) })
		if whole > share {
			f.Impact, f.ImpactRange = rules.Midway(share, whole), &[2]float64{share, whole}
			f.ImpactBasis += "; at most the whole pass of " + name(caller) + ", which the incremental check removes; the estimate is midway, since how much of the pass besides the matched work goes the profile cannot say"
			f.Evidence = append(f.Evidence, rules.Share("CPU under "+name(caller)+" (the whole pass)", whole))
		}
	}
	codeFix, configFix := fixes(fam, calls)
	f.Fix = codeFix
	if len(calls) > 0 {
		// The calling frame decides: the program's code that makes the
		// call is where the change goes, even when the cost is in a
		// library; a packaged program's own code is changed by setting.
		var whose rules.Fact
		var editable bool
		f.Fix, whose, editable = rules.Advise(facts.Get(pass.Facts, facts.Owners), calls[0].Frame, codeFix, configFix)
		f.Evidence = append(f.Evidence, whose)
		if !editable {
			f.Example = ""
		}
	}
	aat := facts.Get(pass.Facts, facts.AllocStacks)
	var allocs func(evidence.Sample) bool
	if aat != nil {
		am := classify(aat)
		allocs = func(s evidence.Sample) bool { return am.of(s) == fi }
	}
	f.Claim = &rules.Claim{Level: rules.LevelCode, CPU: in, Allocs: allocs, Regrade: rules.SeverityFor}
	return f
}

// fixes are the prescription as a change to the calling code, and as the
// choices left when that code is not the user's to edit.
func fixes(fam *family, calls []evidence.Site) (code, config string) {
	caller := "the code that makes the call"
	if len(calls) > 0 {
		caller = rules.SiteName(calls[0].Frame)
	}
	switch fam.kind {
	case setup:
		code = fmt.Sprintf("%s does %s on every call: do it once, at start-up (a package-level variable, a field set in main, a static final in Java), and use the result per request; where it depends on the request, cache it by what varies, with a bounded size.", caller, fam.name)
		config = fmt.Sprintf("It is %s's %s per request: look for the program's setting that caches it or builds it once, or report it to its maintainers.", caller, fam.name)
	case kdf:
		code = fmt.Sprintf("%s hashes a password on every call. When the same credentials come with every request (basic auth, API keys stored as password hashes), remember the verified ones for a while, keyed by a keyed hash of the presented secret (HMAC-SHA-256 with a per-process key) and bounded in size and age, or exchange them once for a session token; keep the slow hash for the first verification and for logins.", caller)
		config = fmt.Sprintf("It is %s hashing a password per request: use the program's session or token mechanism instead of sending the password with every request, or its setting that caches verified credentials.", caller)
	case gather:
		code = fmt.Sprintf("%s goes through a whole collection on every call (%s): check or update only what the request changed (an index by key, a summary kept up to date as items change), or do the whole pass on a timer rather than per request.", caller, fam.name)
		config = fmt.Sprintf("%s goes through a whole collection on every call (%s): look for the program's setting that turns this per-request pass off or makes it incremental, and keep the collection small (remove what is no longer needed), since the cost grows with it.", caller, fam.name)
		for _, k := range knownSettings {
			if len(calls) > 0 && strings.HasPrefix(calls[0].Func, k.caller) {
				config += " " + k.setting
			}
		}
	}
	return code, config
}

// knownSettings are programs' own settings for the per-request work a
// calling frame of theirs does, from the programs' documentation.
var knownSettings = []struct{ caller, setting string }{
	{"github.com/prometheus/pushgateway/storage.(*DiskMetricStore).checkWriteRequest",
		"The pushgateway checks every push against the whole store: --push.disable-consistency-check turns the check off (an inconsistent push then shows at scrape time), and deleting finished jobs' groups keeps the store small."},
}

func basis(k kind) string {
	switch k {
	case kdf:
		return "share of CPU hashing passwords outside initialisation; remembering verified credentials removes all of it for credentials that come again"
	case gather:
		return "share of CPU going through a whole collection per request; doing only the part the request changed removes nearly all of it"
	}
	return "share of CPU in work meant to be done once; doing it once removes all of it (and the garbage it makes)"
}

func capitalise(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
