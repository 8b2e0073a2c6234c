package mcpserver

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/google/pprof/profile"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/perfdoctor/perfdoctor/evidence"
)

type profileInput struct {
	Path       string `json:"path" jsonschema:"a bundle folder, a folder of profiles or one profile file, inside the allowed folders"`
	Kind       string `json:"kind,omitempty" jsonschema:"profile kind: cpu, allocs, heap, heap-start, mutex, block, goroutine, perf, offcpu (default cpu, else perf, else the first the path has)"`
	SampleType string `json:"sample_type,omitempty" jsonschema:"which value of the samples to count (e.g. alloc_space, alloc_objects, inuse_space, contentions); default the profile's own"`
}

type topInput struct {
	profileInput
	N      int    `json:"n,omitempty" jsonschema:"functions per page (default 10, at most 100)"`
	Sort   string `json:"sort,omitempty" jsonschema:"flat (default: time in the function itself) or cum (with its callees)"`
	Focus  string `json:"focus,omitempty" jsonschema:"keep only samples with a frame matching this regular expression"`
	Ignore string `json:"ignore,omitempty" jsonschema:"drop samples with a frame matching this regular expression"`
	Cursor string `json:"cursor,omitempty"`
}

type profileHead struct {
	Kind       string `json:"kind"`
	SampleType string `json:"sample_type"`
	Unit       string `json:"unit"`
	Total      int64  `json:"total" jsonschema:"the profile's total in unit, after focus and ignore"`
}

type topAnswer struct {
	profileHead
	Functions int      `json:"total_functions"`
	Rows      []topRow `json:"rows"`
	Next      string   `json:"next_cursor,omitempty"`
}

type topRow struct {
	Function  string  `json:"function"`
	Flat      int64   `json:"flat"`
	FlatShare float64 `json:"flat_share"`
	Cum       int64   `json:"cum"`
	CumShare  float64 `json:"cum_share"`
}

type neighboursInput struct {
	profileInput
	Function string `json:"function" jsonschema:"the function: its full name (main.handler) or a regular expression matching it"`
	N        int    `json:"n,omitempty" jsonschema:"rows per page (default 10, at most 100)"`
	Cursor   string `json:"cursor,omitempty"`
}

type neighboursAnswer struct {
	profileHead
	Matched   []string `json:"matched" jsonschema:"the functions the pattern matched (at most 5 named)"`
	Cum       int64    `json:"cum" jsonschema:"the matched functions with their callees"`
	CumShare  float64  `json:"cum_share"`
	Self      int64    `json:"self" jsonschema:"in the matched functions themselves"`
	SelfShare float64  `json:"self_share"`
	Edges     int      `json:"total_rows"`
	Rows      []edge   `json:"rows" jsonschema:"callers (who calls it) or callees (what it calls), by the value through that edge"`
	Next      string   `json:"next_cursor,omitempty"`
}

type edge struct {
	Function string  `json:"function"`
	Value    int64   `json:"value"`
	Share    float64 `json:"share" jsonschema:"of the profile's total"`
}

type sourceInput struct {
	profileInput
	Function string `json:"function" jsonschema:"the function: its full name or a regular expression; the hottest match is shown"`
	Context  int    `json:"context,omitempty" jsonschema:"lines shown around each hot line (default 2, at most 10)"`
}

type sourceAnswer struct {
	profileHead
	Function string       `json:"function"`
	Others   []string     `json:"other_matches,omitempty"`
	File     string       `json:"file,omitempty"`
	Cum      int64        `json:"cum"`
	Readable bool         `json:"readable" jsonschema:"whether the file's text is shown"`
	Note     string       `json:"note,omitempty" jsonschema:"why the text is missing"`
	Lines    []sourceLine `json:"lines" jsonschema:"the hottest lines with their neighbours, in file order"`
}

type sourceLine struct {
	Line int64  `json:"line"`
	Flat int64  `json:"flat,omitempty"`
	Cum  int64  `json:"cum,omitempty"`
	Text string `json:"text,omitempty"`
}

func (s *server) registerProfiles(srv *mcp.Server) {
	addTool(srv, "top", "The hottest functions of one profile of a bundle or profile file, like pprof's top: flat "+
		"(in the function) and cum (with callees), optionally focused on or ignoring frames by regular expression.", s.top)
	addTool(srv, "callers", "Who calls a function, and how much of the profile flows through each caller "+
		"(the upper half of pprof's sandwich view).", func(ctx context.Context, in neighboursInput) (*neighboursAnswer, error) {
		return s.neighbours(ctx, in, +1)
	})
	addTool(srv, "callees", "What a function calls, and how much of the profile each callee takes "+
		"(the lower half of pprof's sandwich view); self is the time in the function itself.", func(ctx context.Context, in neighboursInput) (*neighboursAnswer, error) {
		return s.neighbours(ctx, in, -1)
	})
	addTool(srv, "source", "The hottest source lines of a function, with the profile's value per line, and the "+
		"file's text when it lies in an allowed folder.", s.source)
}

// stackProfile is a profile reduced to what these tools read: each
// sample's value and its frames, leaf first, inlined frames included.
type stackProfile struct {
	head    profileHead
	samples []sample
}

type sample struct {
	value  int64
	frames []frame
}

type frame struct {
	function, file string
	line           int64
}

func (s *server) profile(ctx context.Context, in profileInput) (*stackProfile, error) {
	ev, err := s.loadEvidence(ctx, in.Path)
	if err != nil {
		return nil, err
	}
	kind := evidence.Kind(in.Kind)
	if kind == "" {
		kinds := make([]string, 0, len(ev.Profiles))
		for k := range ev.Profiles {
			kinds = append(kinds, string(k))
		}
		sort.Strings(kinds)
		switch {
		case ev.Profile(evidence.CPU) != nil:
			kind = evidence.CPU
		case ev.Profile(evidence.Perf) != nil:
			kind = evidence.Perf
		case len(kinds) > 0:
			kind = evidence.Kind(kinds[0])
		}
	}
	p := ev.Profile(kind)
	if p == nil {
		return nil, fmt.Errorf("%s has no %s profile (it has: %s)", in.Path, orNone(string(kind)), profileKinds(ev))
	}
	idx, err := sampleIndex(p, in.SampleType)
	if err != nil {
		return nil, err
	}
	sp := &stackProfile{head: profileHead{Kind: string(kind), SampleType: p.SampleType[idx].Type, Unit: p.SampleType[idx].Unit}}
	for _, smp := range p.Sample {
		v := smp.Value[idx]
		if v == 0 {
			continue
		}
		var fs []frame
		for _, loc := range smp.Location {
			for _, ln := range loc.Line {
				if ln.Function == nil {
					continue
				}
				fs = append(fs, frame{function: ln.Function.Name, file: ln.Function.Filename, line: ln.Line})
			}
			if len(loc.Line) == 0 {
				fs = append(fs, frame{function: fmt.Sprintf("0x%x", loc.Address)})
			}
		}
		sp.samples = append(sp.samples, sample{value: v, frames: fs})
		sp.head.Total += v
	}
	return sp, nil
}

func sampleIndex(p *profile.Profile, want string) (int, error) {
	if len(p.SampleType) == 0 {
		return 0, errors.New("the profile has no sample types")
	}
	if want == "" {
		want = p.DefaultSampleType
	}
	if want == "" {
		return len(p.SampleType) - 1, nil
	}
	var names []string
	for i, st := range p.SampleType {
		if st.Type == want {
			return i, nil
		}
		names = append(names, st.Type)
	}
	return 0, fmt.Errorf("the profile has no sample type %q (it has: %s)", want, strings.Join(names, ", "))
}

func profileKinds(ev *evidence.Evidence) string {
	var ks []string
	for k := range ev.Profiles {
		ks = append(ks, string(k))
	}
	sort.Strings(ks)
	if len(ks) == 0 {
		return "no profiles"
	}
	return strings.Join(ks, ", ")
}

func orNone(s string) string {
	if s == "" {
		return "profile of any kind; no"
	}
	return s
}

func compile(name, expr string) (*regexp.Regexp, error) {
	if expr == "" {
		return nil, nil
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return re, nil
}

func anyFrame(fs []frame, re *regexp.Regexp) bool {
	return slices.ContainsFunc(fs, func(f frame) bool { return re.MatchString(f.function) })
}

func share(v, total int64) float64 {
	if total == 0 {
		return 0
	}
	return round4(float64(v) / float64(total))
}

func (s *server) top(ctx context.Context, in topInput) (*topAnswer, error) {
	start, err := parseCursor(in.Cursor)
	if err != nil {
		return nil, err
	}
	n, err := pageLimit(in.N, 10)
	if err != nil {
		return nil, err
	}
	if in.Sort != "" && in.Sort != "flat" && in.Sort != "cum" {
		return nil, fmt.Errorf("sort %q: want flat or cum", in.Sort)
	}
	focus, err := compile("focus", in.Focus)
	if err != nil {
		return nil, err
	}
	ignore, err := compile("ignore", in.Ignore)
	if err != nil {
		return nil, err
	}
	sp, err := s.profile(ctx, in.profileInput)
	if err != nil {
		return nil, err
	}
	flat, cum := map[string]int64{}, map[string]int64{}
	var total int64
	for _, smp := range sp.samples {
		if (focus != nil && !anyFrame(smp.frames, focus)) || (ignore != nil && anyFrame(smp.frames, ignore)) || len(smp.frames) == 0 {
			continue
		}
		total += smp.value
		flat[smp.frames[0].function] += smp.value
		seen := map[string]bool{}
		for _, f := range smp.frames {
			if !seen[f.function] {
				seen[f.function] = true
				cum[f.function] += smp.value
			}
		}
	}
	rows := make([]topRow, 0, len(cum))
	for fn, c := range cum {
		rows = append(rows, topRow{Function: clip(fn, factChars), Flat: flat[fn], FlatShare: share(flat[fn], total), Cum: c, CumShare: share(c, total)})
	}
	sort.Slice(rows, func(i, j int) bool {
		a, b := rows[i], rows[j]
		if in.Sort == "cum" && a.Cum != b.Cum {
			return a.Cum > b.Cum
		}
		if a.Flat != b.Flat {
			return a.Flat > b.Flat
		}
		if a.Cum != b.Cum {
			return a.Cum > b.Cum
		}
		return a.Function < b.Function
	})
	a := &topAnswer{profileHead: sp.head, Functions: len(rows)}
	a.Total = total
	return a, fitPage(rows, start, n, a, func(p []topRow, next string) { a.Rows, a.Next = p, next })
}

// neighbours is callers (dir +1: the frame above each match) and callees
// (dir -1: the frame below).
func (s *server) neighbours(ctx context.Context, in neighboursInput, dir int) (*neighboursAnswer, error) {
	start, err := parseCursor(in.Cursor)
	if err != nil {
		return nil, err
	}
	n, err := pageLimit(in.N, 10)
	if err != nil {
		return nil, err
	}
	sp, err := s.profile(ctx, in.profileInput)
	if err != nil {
		return nil, err
	}
	match, err := functionMatcher(sp, in.Function)
	if err != nil {
		return nil, err
	}
	a := &neighboursAnswer{profileHead: sp.head}
	matched := map[string]int64{}
	values := map[string]int64{}
	for _, smp := range sp.samples {
		hit := false
		seen, counted := map[string]bool{}, map[string]bool{}
		for i, f := range smp.frames {
			if !match(f.function) {
				continue
			}
			if !counted[f.function] { // once per sample, recursive or not
				counted[f.function] = true
				matched[f.function] += smp.value
			}
			hit = true
			j := i + dir
			var next string
			switch {
			case j < 0:
				continue // a callee of the leaf: its self time, counted below
			case j >= len(smp.frames):
				next = "(root)"
			default:
				next = smp.frames[j].function
			}
			if match(next) || seen[next] {
				continue // recursion, or an edge this sample already counted
			}
			seen[next] = true
			values[next] += smp.value
		}
		if hit {
			a.Cum += smp.value
			if match(smp.frames[0].function) {
				a.Self += smp.value
			}
		}
	}
	names, err := rankMatches(matched, sp.head.Kind, in.Function)
	if err != nil {
		return nil, err
	}
	for _, fn := range names[:min(len(names), 5)] {
		a.Matched = append(a.Matched, clip(fn, factChars))
	}
	a.CumShare, a.SelfShare = share(a.Cum, a.Total), share(a.Self, a.Total)
	rows := make([]edge, 0, len(values))
	for fn, v := range values {
		rows = append(rows, edge{Function: clip(fn, factChars), Value: v, Share: share(v, a.Total)})
	}
	sort.Slice(rows, func(i, j int) bool {
		return rows[i].Value > rows[j].Value || (rows[i].Value == rows[j].Value && rows[i].Function < rows[j].Function)
	})
	a.Edges = len(rows)
	return a, fitPage(rows, start, n, a, func(p []edge, next string) { a.Rows, a.Next = p, next })
}

// functionMatcher matches a function by its exact name when the profile
// has a function of that name (main.(*T).Serve is also a regular
// expression, matching other names), else as a regular expression.
func functionMatcher(sp *stackProfile, name string) (func(string) bool, error) {
	if name == "" {
		return nil, errors.New("function is empty")
	}
	for _, smp := range sp.samples {
		for _, f := range smp.frames {
			if f.function == name {
				return func(fn string) bool { return fn == name }, nil
			}
		}
	}
	re, err := regexp.Compile(name)
	if err != nil {
		return nil, fmt.Errorf("function %q is neither a name in the %s profile nor a regular expression: %w", name, sp.head.Kind, err)
	}
	return re.MatchString, nil
}

// rankMatches orders the functions a pattern matched by their value,
// largest first, or says that none matched.
func rankMatches(values map[string]int64, kind, pattern string) ([]string, error) {
	if len(values) == 0 {
		return nil, fmt.Errorf("no function in the %s profile matches %q; top lists its functions", kind, pattern)
	}
	names := make([]string, 0, len(values))
	for fn := range values {
		names = append(names, fn)
	}
	sort.Slice(names, func(i, j int) bool {
		return values[names[i]] > values[names[j]] || (values[names[i]] == values[names[j]] && names[i] < names[j])
	})
	return names, nil
}

// Bounds of the source answer.
const (
	hotLines    = 8
	sourceLines = 40
	lineChars   = 160
	maxSource   = 4 << 20
)

func (s *server) source(ctx context.Context, in sourceInput) (*sourceAnswer, error) {
	ctxLines := in.Context
	switch {
	case ctxLines == 0:
		ctxLines = 2
	case ctxLines < 0 || ctxLines > 10:
		return nil, fmt.Errorf("context %d out of range 1..10", ctxLines)
	}
	sp, err := s.profile(ctx, in.profileInput)
	if err != nil {
		return nil, err
	}
	match, err := functionMatcher(sp, in.Function)
	if err != nil {
		return nil, err
	}
	// The hottest matching function by cumulative value, and its file.
	cumByFn, files := map[string]int64{}, map[string]string{}
	for _, smp := range sp.samples {
		seen := map[string]bool{}
		for _, f := range smp.frames {
			if match(f.function) && !seen[f.function] {
				seen[f.function] = true
				cumByFn[f.function] += smp.value
				if files[f.function] == "" {
					files[f.function] = f.file
				}
			}
		}
	}
	names, err := rankMatches(cumByFn, sp.head.Kind, in.Function)
	if err != nil {
		return nil, err
	}
	fn := names[0]
	a := &sourceAnswer{profileHead: sp.head, Function: clip(fn, factChars), File: clip(files[fn], 2*factChars), Cum: cumByFn[fn], Lines: []sourceLine{}}
	for _, o := range names[1:min(len(names), 4)] {
		a.Others = append(a.Others, clip(o, factChars))
	}
	// Value per line of the function: flat where it is the leaf, cum
	// where it is anywhere on the stack (once per sample and line).
	flat, cum := map[int64]int64{}, map[int64]int64{}
	for _, smp := range sp.samples {
		seen := map[int64]bool{}
		for i, f := range smp.frames {
			if f.function != fn {
				continue
			}
			if i == 0 {
				flat[f.line] += smp.value
			}
			if !seen[f.line] {
				seen[f.line] = true
				cum[f.line] += smp.value
			}
		}
	}
	hot := make([]int64, 0, len(cum))
	for l := range cum {
		hot = append(hot, l)
	}
	sort.Slice(hot, func(i, j int) bool {
		return cum[hot[i]] > cum[hot[j]] || (cum[hot[i]] == cum[hot[j]] && hot[i] < hot[j])
	})
	hot = hot[:min(len(hot), hotLines)]

	text, note := s.readSource(files[fn])
	a.Readable, a.Note = text != nil, note
	show := map[int64]bool{}
	for _, l := range hot {
		show[l] = true
		if text != nil {
			for d := int64(-ctxLines); d <= int64(ctxLines); d++ {
				if l+d >= 1 && l+d <= int64(len(text)) {
					show[l+d] = true
				}
			}
		}
	}
	lines := make([]int64, 0, len(show))
	for l := range show {
		lines = append(lines, l)
	}
	slices.Sort(lines)
	// Keep the hot lines first when the window is too long.
	if len(lines) > sourceLines {
		keep := lines[:0]
		for _, l := range lines {
			if slices.Contains(hot, l) || len(keep) < sourceLines-len(hot) {
				keep = append(keep, l)
			}
		}
		lines = keep
	}
	for _, l := range lines {
		sl := sourceLine{Line: l, Flat: flat[l], Cum: cum[l]}
		if text != nil && l >= 1 && l <= int64(len(text)) {
			sl.Text = clip(text[l-1], lineChars)
		}
		a.Lines = append(a.Lines, sl)
	}
	return a, fitPage(a.Lines, 0, len(a.Lines), a, func(p []sourceLine, _ string) { a.Lines = p })
}

// readSource reads a source file's lines when it lies in an allowed
// folder, else says why not.
func (s *server) readSource(file string) ([]string, string) {
	if file == "" {
		return nil, "the profile names no file for this function"
	}
	real, err := s.readPath(file)
	if err != nil {
		return nil, "source not shown: " + err.Error()
	}
	f, err := os.Open(real)
	if err != nil {
		return nil, "source not shown: " + err.Error()
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(io.LimitReader(f, maxSource))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if err := sc.Err(); err != nil {
		return nil, "source not shown: " + err.Error()
	}
	return lines, ""
}
