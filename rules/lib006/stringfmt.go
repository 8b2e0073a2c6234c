// Package lib006 detects fmt formatting and string concatenation on the
// hot path (finding class string-formatting).
package lib006

import (
	"fmt"
	"strings"

	"github.com/perfdoctor/perfdoctor/facts"

	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/facts/frames"
	"github.com/perfdoctor/perfdoctor/internal/human"
	"github.com/perfdoctor/perfdoctor/rules"
)

// Rule is LIB006.
var Rule = &rules.Rule{
	ID:    "LIB006",
	Class: "string-formatting",
	Doc: rules.Doc{
		Title: "String formatting and concatenation take a large share of CPU",
		Text: `fmt parses its format string on every call, boxes each argument in an
interface, inspects it by reflection and allocates the result; concatenation
with + allocates a new string each time. Building keys, IDs and messages this
way on every request is cheap to write and expensive to run, and the
allocations feed the garbage collector.`,
		Evidence: `CPU share of samples under fmt's formatting functions (Sprintf, Sprint,
Sprintln, Fprint*, Errorf, Append*, and the printer's (*pp)/(*fmt) methods,
which include the strconv work they call) or the runtime's string
concatenation (runtime.concatstrings, concatstring2-5, concatbytes). Samples
with a logger on the stack are left to LIB008 and samples inside a write
system call (the I/O part of Fprintf) to LIB005. The share is split by entry
point and charged to the calling code. Reports from 5% of CPU.`,
		Fix: `Build strings with a strings.Builder sized with Grow, append numbers with
strconv.AppendInt/AppendFloat into a reused []byte, use struct map keys instead
of formatted string keys, create hot-path errors once (sentinel errors) or
format them lazily, and avoid string([]byte) round trips.`,
		Before: `key := fmt.Sprintf("%s:%d", user, id)`,
		After: `var b strings.Builder
b.Grow(len(user) + 21)
b.WriteString(user); b.WriteByte(':')
b.Write(strconv.AppendInt(scratch[:0], id, 10))
key := b.String()`,
		Caveats: caveat,
		Since:   "0.1",
		Refs:    []string{"https://pkg.go.dev/strings#Builder", "https://pkg.go.dev/strconv#AppendInt"},
	},
	Needs: []rules.Input{rules.CPU},
	Facts: []facts.Key{facts.CPUStacks},
	Check: check,
}

const caveat = "Rewriting is worth it on the hot path only: fmt elsewhere costs little and reads better."

var (
	fmtFrames = evidence.FuncPrefix(
		"fmt.Sprint", "fmt.Fprint", "fmt.Print", "fmt.Errorf", "fmt.Append",
		"fmt.(*pp).", "fmt.(*fmt).", "fmt.newPrinter",
	)
	concatFrames = evidence.FuncPrefix("runtime.concatstring", "runtime.concatbyte")
	// Frames is the formatting family.
	Frames = evidence.Any(fmtFrames, concatFrames)

	// frames.Loggers format their own records: LIB008's concern.
	strconvUnder = evidence.FuncPrefix("strconv.")
)

// entry is a family of entry points with its advice.
type entry struct {
	name   string
	frames evidence.Matcher
	fix    string
}

var entries = []entry{
	{"fmt.Sprintf and friends", evidence.FuncPrefix("fmt.Sprint", "fmt.Append"),
		"build the string with a strings.Builder sized with Grow and strconv.AppendInt/AppendFloat (or append into a reused []byte); for map keys, a struct key avoids building a string at all"},
	{"fmt.Errorf", evidence.FuncPrefix("fmt.Errorf"),
		"errors are built on the hot path: return sentinel errors (var ErrX = errors.New(...)) or a typed error whose Error method formats only when called, and wrap with context only on the rare path"},
	{"fmt.Fprintf and friends", evidence.FuncPrefix("fmt.Fprint", "fmt.Print"),
		"write the pieces directly (w.Write, io.WriteString) with numbers appended by strconv.Append* into a scratch buffer"},
	{"string concatenation", concatFrames,
		"concatenation allocates a new string per +: use a strings.Builder with Grow (or a bytes.Buffer) when building in steps or loops, and avoid string([]byte) round trips"},
}

const (
	minShare = 0.05
	// recoverable: a Builder/strconv.Append version needs about a third of
	// the time and allocates once, so the garbage's GC goes too: casebook C4's
	// fix removed more CPU per request than the formatting's own share
	// (casebook/README.md, calibration). So the whole share.
	recoverable = 1.0
)

func check(pass *rules.Pass) error {
	if !pass.EnoughCPU() {
		return nil
	}
	cpu := facts.Get(pass.Facts, facts.CPUStacks)
	in, logged, writing := cpu.Has(Frames), cpu.Has(frames.Loggers), cpu.Has(frames.WriteSyscall)
	hot := func(s evidence.Sample) bool { return in(s) && !logged(s) && !writing(s) }
	share := cpu.ShareWhere(hot)
	if share < minShare {
		return nil
	}
	// Each sample is charged to its outermost formatting entry point.
	isEntry := make([][]bool, len(entries))
	for i, e := range entries {
		isEntry[i] = cpu.FrameHits(e.frames)
	}
	entryOf := func(s evidence.Sample) int {
		for j := len(s.Frames) - 1; j >= 0; j-- {
			for i := range entries {
				if isEntry[i][s.Frames[j]] {
					return i
				}
			}
		}
		return -1
	}
	byEntry := make([]int64, len(entries))
	for _, s := range cpu.Samples {
		if hot(s) {
			if i := entryOf(s); i >= 0 {
				byEntry[i] += s.Value
			}
		}
	}
	top := 0
	for i := range entries {
		if byEntry[i] > byEntry[top] {
			top = i
		}
	}
	inStrconv := cpu.Has(strconvUnder)
	strconvShare := cpu.ShareWhere(func(s evidence.Sample) bool { return hot(s) && inStrconv(s) })

	app := func(fn string) bool { return rules.IsApplication(fn) && !frames.Loggers(fn) }
	caller := cpu.CallerOf(Frames, app)
	sites := cpu.TopSites(5, func(s evidence.Sample) *evidence.Frame {
		if !hot(s) {
			return nil
		}
		return caller(s)
	})

	impact := share * recoverable
	f := rules.Finding{
		Severity:    rules.SeverityFor(impact),
		Impact:      impact,
		Resource:    "cpu",
		ImpactBasis: "share of CPU in fmt formatting and string concatenation outside frames.Loggers; strings.Builder and strconv.Append* versions need about a third of the time and leave no garbage to collect, so about all of it (case C4: 42% of CPU here, CPU per request down 53%)",
		Summary:     fmt.Sprintf("String formatting uses %s of CPU, mostly %s", human.Percent(share), entries[top].name),
		Evidence: []rules.Fact{
			rules.Share("formatting and concatenation share of CPU", share),
			rules.Share("strconv under them", strconvShare),
		},
		Example:   pass.Rule.Doc.Before + "\n->\n" + pass.Rule.Doc.After,
		Caveats:   []string{caveat},
		Locations: rules.Locations(sites, "code formatting strings"),
		Frames:    cpu.Matched(Frames, 12),
	}
	for i, e := range entries {
		if byEntry[i] > 0 {
			f.Evidence = append(f.Evidence, rules.Share(e.name, float64(byEntry[i])/float64(cpu.Total)))
		}
	}
	var fix strings.Builder
	if len(sites) > 0 {
		fmt.Fprintf(&fix, "In %s: ", rules.SiteList(sites, 3))
		f.Summary += ", in " + rules.ShortFunc(sites[0].Func)
		fix.WriteString(entries[top].fix)
	} else {
		fix.WriteString(strings.ToUpper(entries[top].fix[:1]) + entries[top].fix[1:])
	}
	fix.WriteString(".")
	for i, e := range entries {
		if i != top && byEntry[i] >= byEntry[top]/3 && byEntry[i] > 0 {
			fmt.Fprintf(&fix, " For %s: %s.", e.name, e.fix)
		}
	}
	f.Fix = fix.String()
	if top == 1 {
		f.Example = "return fmt.Errorf(\"user %d not found\", id)\n->\nvar ErrNotFound = errors.New(\"user not found\") // once\nreturn ErrNotFound"
	}
	f.Claim = &rules.Claim{Level: rules.LevelCode, CPU: hot, Regrade: rules.SeverityFor}
	pass.Report(f)
	return nil
}
