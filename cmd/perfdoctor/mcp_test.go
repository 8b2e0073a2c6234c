package main

import (
	"bufio"
	"context"
	"encoding/json"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/perfdoctor/perfdoctor/internal/demoservice"
	"github.com/perfdoctor/perfdoctor/internal/mcpserver"
	"github.com/perfdoctor/perfdoctor/internal/supervise"
	"github.com/perfdoctor/perfdoctor/rules/catalog"
)

// recorded is the casebook's recorded bundles (fixture in, findings out).
const recorded = "../../casebook/testdata/recorded/go1.26"

// mcpSession starts `perfdoctor mcp` (this test binary acting as the CLI)
// as a subprocess and connects the SDK's client to it over its stdio.
func mcpSession(t *testing.T, opts *mcp.ClientOptions, roots ...string) *mcp.ClientSession {
	t.Helper()
	args := []string{"mcp"}
	for _, r := range roots {
		args = append(args, "--allow", r)
	}
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), asCLI+"=1")
	cmd.Stderr = os.Stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "perfdoctor-test", Version: "1"}, opts)
	cs, err := client.Connect(t.Context(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connecting to perfdoctor mcp: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// largestAnswer is the largest structured answer seen, for the log.
var largestAnswer int

// callTool calls a tool that must succeed, checks its answer is within
// the bound, and decodes it.
func callTool[T any](t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) T {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if res.IsError {
		t.Fatalf("%s %v: tool error: %s", name, args, text(res))
	}
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > mcpserver.MaxAnswer || len(text(res)) > mcpserver.MaxAnswer {
		t.Errorf("%s %v: answer of %d bytes (text %d), over the %d-byte bound", name, args, len(b), len(text(res)), mcpserver.MaxAnswer)
	}
	largestAnswer = max(largestAnswer, len(b))
	var out T
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("%s: decoding %s: %v", name, b, err)
	}
	return out
}

// callError calls a tool that must fail, and returns its one-line message.
func callError(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) string {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: a protocol error where a tool error was due: %v", name, err)
	}
	msg := text(res)
	if !res.IsError || msg == "" || strings.Contains(msg, "\n") {
		t.Errorf("%s %v: want a one-line tool error, got error=%v %q", name, args, res.IsError, msg)
	}
	return msg
}

func text(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

type findingsAnswer struct {
	Bundle   string `json:"bundle"`
	Total    int    `json:"total_findings"`
	Findings []struct {
		ID, Rule, Severity string
		Locations          []struct{ Function string }
	} `json:"findings"`
	Next string `json:"next_cursor"`
}

type rowsAnswer struct {
	Total int   `json:"total"`
	Count int   `json:"total_functions"`
	Edges int   `json:"total_rows"`
	Self  int64 `json:"self"`
	Cum   int64 `json:"cum"`
	Rows  []struct {
		Function  string
		Flat, Cum int64
		Value     int64
	} `json:"rows"`
	Functions []struct{ Function string } `json:"functions"`
	Next      string                      `json:"next_cursor"`
}

type sourceAnswer struct {
	Function string
	File     string
	Readable bool
	Note     string
	Lines    []struct {
		Line      int64
		Flat, Cum int64
		Text      string
	}
}

// largestRecorded is the recorded bundle with the most bytes: the one
// most likely to overflow an answer.
func largestRecorded(t *testing.T) string {
	t.Helper()
	dirs, err := os.ReadDir(recorded)
	if err != nil {
		t.Fatal(err)
	}
	best, bestSize := "", int64(-1)
	for _, d := range dirs {
		var size int64
		files, _ := os.ReadDir(filepath.Join(recorded, d.Name()))
		for _, f := range files {
			if info, err := f.Info(); err == nil {
				size += info.Size()
			}
		}
		if size > bestSize {
			best, bestSize = d.Name(), size
		}
	}
	abs, err := filepath.Abs(filepath.Join(recorded, best))
	if err != nil {
		t.Fatal(err)
	}
	return abs
}

// TestMCPRecorded drives the tools that read files over the largest
// recorded bundle through a real subprocess: every answer within the
// bound, pages that add up to the whole, the casebook's expected finding,
// and one-line tool errors for what is refused.
func TestMCPRecorded(t *testing.T) {
	bad := largestRecorded(t)
	fixed := strings.TrimSuffix(bad, "-bad") + "-fixed"
	cs := mcpSession(t, nil, t.TempDir(), filepath.Dir(bad))

	tools, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
		if tool.InputSchema == nil || tool.Description == "" {
			t.Errorf("tool %s has no input schema or description", tool.Name)
		}
	}
	for _, want := range []string{"diagnose", "collect", "run", "top", "callers", "callees", "source", "diff", "verify", "explain"} {
		if !slices.Contains(names, want) {
			t.Errorf("tool %s missing (have %v)", want, names)
		}
	}

	// diagnose, page by page: the pages hold every finding once, and the
	// top finding is the one the casebook expects.
	var ids []string
	cursor, first := "", findingsAnswer{}
	for page := 0; ; page++ {
		a := callTool[findingsAnswer](t, cs, "diagnose", map[string]any{"path": bad, "cursor": cursor})
		if page == 0 {
			first = a
		}
		for _, f := range a.Findings {
			ids = append(ids, f.ID)
		}
		if a.Next == "" {
			break
		}
		if len(a.Findings) == 0 || page > 50 {
			t.Fatalf("page %d: no progress (cursor %q)", page, a.Next)
		}
		cursor = a.Next
	}
	if first.Total == 0 || len(ids) != first.Total || len(slices.Compact(slices.Clone(ids))) != len(ids) {
		t.Errorf("pages gave %d findings %v, the diagnosis has %d", len(ids), ids, first.Total)
	}
	want := wantTop(t, filepath.Join(bad, "want.txt"))
	if r := catalog.Lookup(want); want != "" && (r == nil || len(first.Findings) == 0 || first.Findings[0].Rule != r.ID) {
		t.Errorf("top finding %+v, want.txt says %s", first.Findings, want)
	}

	// top with the largest page allowed stays within the bound; its
	// pages cover every function.
	top := callTool[rowsAnswer](t, cs, "top", map[string]any{"path": bad, "n": 100})
	if len(top.Rows) == 0 || top.Total <= 0 {
		t.Fatalf("top: %+v", top)
	}
	if top.Count > len(top.Rows) && top.Next == "" {
		t.Errorf("top: %d of %d functions and no cursor", len(top.Rows), top.Count)
	}
	cum := callTool[rowsAnswer](t, cs, "top", map[string]any{"path": bad, "n": 5, "sort": "cum"})
	for i := 1; i < len(cum.Rows); i++ {
		if cum.Rows[i].Cum > cum.Rows[i-1].Cum {
			t.Errorf("top by cum out of order: %+v", cum.Rows)
		}
	}
	hot := top.Rows[0].Function
	focused := callTool[rowsAnswer](t, cs, "top", map[string]any{"path": bad, "focus": "^runtime\\."})
	if focused.Total > top.Total || focused.Total == 0 {
		t.Errorf("focus on runtime: total %d of %d", focused.Total, top.Total)
	}

	// The sandwich of a function below the root: the callers' values sum
	// to at least its cum less what starts in it.
	mid := cum.Rows[len(cum.Rows)-1].Function
	callers := callTool[rowsAnswer](t, cs, "callers", map[string]any{"path": bad, "function": mid, "n": 100})
	if len(callers.Rows) == 0 || callers.Cum == 0 {
		t.Errorf("callers of %s: %+v", mid, callers)
	}
	callees := callTool[rowsAnswer](t, cs, "callees", map[string]any{"path": bad, "function": mid, "n": 100})
	var below int64
	for _, r := range callees.Rows {
		below += r.Value
	}
	if callees.Next == "" && below+callees.Self < callees.Cum {
		t.Errorf("callees of %s: %d below + %d self < %d cum", mid, below, callees.Self, callees.Cum)
	}
	src := callTool[sourceAnswer](t, cs, "source", map[string]any{"path": bad, "function": hot})
	if len(src.Lines) == 0 || (!src.Readable && src.Note == "") {
		t.Errorf("source of %s: %+v", hot, src)
	}

	diff := callTool[rowsAnswer](t, cs, "diff", map[string]any{"a": fixed, "b": bad, "limit": 100})
	if len(diff.Functions) == 0 {
		t.Errorf("diff %s %s: no functions", fixed, bad)
	}

	// explain pages a rule's documentation and lists the catalog.
	var page strings.Builder
	cursor = ""
	for range 20 {
		a := callTool[struct {
			Rule, Page string
			Next       string `json:"next_cursor"`
		}](t, cs, "explain", map[string]any{"rule": "GC001", "cursor": cursor})
		page.WriteString(a.Page)
		if cursor = a.Next; cursor == "" {
			break
		}
	}
	if !strings.Contains(page.String(), "GC001") || cursor != "" {
		t.Errorf("explain GC001: %d bytes, cursor %q", page.Len(), cursor)
	}
	list := callTool[struct{ Rules []struct{ ID string } }](t, cs, "explain", map[string]any{})
	if len(list.Rules) < 10 {
		t.Errorf("explain lists %d rules", len(list.Rules))
	}

	// Refusals are tool errors of one line.
	goMod, err := filepath.Abs("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{"diagnose", map[string]any{"path": "/etc"}, "outside the allowed folders"},
		{"diagnose", map[string]any{"path": goMod}, "outside the allowed folders"},
		{"diagnose", map[string]any{}, "give path"},
		{"top", map[string]any{"path": bad, "kind": "offcpu"}, "no offcpu profile"},
		{"callers", map[string]any{"path": bad, "function": "no.such.function$"}, "no function"},
		{"collect", map[string]any{"target": "http://192.0.2.1:6060"}, "not on loopback"},
		{"explain", map[string]any{"rule": "XX999"}, "no rule"},
		{"top", map[string]any{"path": bad, "cursor": "x"}, "cursor"},
	} {
		if msg := callError(t, cs, c.tool, c.args); !strings.Contains(msg, c.want) {
			t.Errorf("%s %v: error %q, want it to say %q", c.tool, c.args, msg, c.want)
		}
	}
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "top", Arguments: map[string]any{"path": bad, "n": "ten"}})
	if err == nil && !res.IsError {
		t.Errorf("top with n a string: accepted")
	}
	t.Logf("%s: the largest answer was %d bytes (bound %d)", filepath.Base(bad), largestAnswer, mcpserver.MaxAnswer)
}

// wantTop reads the rule a want.txt expects first ("top NAME ...").
func wantTop(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if fields := strings.Fields(sc.Text()); len(fields) >= 2 && fields[0] == "top" {
			return fields[1]
		}
	}
	return ""
}

// TestMCPLive drives the live tools against the demo service on
// loopback: collect, diagnose a target, run under load, source of its
// hot code (readable: the repository is an allowed folder) and verify.
func TestMCPLive(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a service and loads it")
	}
	t.Setenv(asCLI, "1")
	p, ready, err := supervise.StartLine(t.Context(), exec.Command(os.Args[0], "demo-service"), demoservice.ReadyPrefix, 15*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	appURL, pprofURL, err := demoservice.ParseReady(ready)
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	repo, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	progress := make(chan *mcp.ProgressNotificationParams, 100)
	cs := mcpSession(t, &mcp.ClientOptions{ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
		progress <- req.Params
	}}, out, repo)

	c := callTool[struct {
		Bundle string
		Items  []string
	}](t, cs, "collect", map[string]any{"target": pprofURL, "duration_seconds": 1, "output": "c1"})
	if c.Bundle != filepath.Join(out, "c1") || !slices.Contains(c.Items, "cpu") {
		t.Errorf("collect: %+v", c)
	}
	if msg := callError(t, cs, "collect", map[string]any{"target": pprofURL, "duration_seconds": 1, "output": "c1"}); !strings.Contains(msg, "already exists") {
		t.Errorf("collect into an existing folder: %q", msg)
	}
	d := callTool[findingsAnswer](t, cs, "diagnose", map[string]any{"target": pprofURL, "duration_seconds": 1})
	if d.Bundle == "" || filepath.Dir(d.Bundle) != out {
		t.Errorf("diagnose of a target: bundle %q, want one in %s", d.Bundle, out)
	}

	r := callTool[struct {
		Load string
		findingsAnswer
	}](t, cs, "run", map[string]any{"target": pprofURL, "load": appURL, "duration_seconds": 3, "warmup_seconds": 1, "concurrency": 4, "output": "run1"})
	if !strings.Contains(r.Load, "req") || r.Total == 0 {
		t.Errorf("run: %+v", r)
	}
	found := false
	for _, f := range r.Findings {
		found = found || f.Rule == "GC001"
	}
	if !found {
		t.Errorf("run on the demo service found no GC pressure (GC001): %+v", r.Findings)
	}
	// The demo's search is its own code, built from this repository: its
	// source is readable.
	src := callTool[sourceAnswer](t, cs, "source", map[string]any{"path": filepath.Join(out, "run1"), "function": "demoservice.search"})
	hasText := slices.ContainsFunc(src.Lines, func(l struct {
		Line      int64
		Flat, Cum int64
		Text      string
	}) bool {
		return l.Cum > 0 && l.Text != ""
	})
	if !src.Readable || !hasText || !strings.HasSuffix(src.File, "demoservice.go") {
		t.Errorf("source of the demo's search: %+v", src)
	}

	// The same service as any local process, observed through perf
	// under load (idle, perf would sample nothing). A PID that is not a
	// JVM is refused in one line.
	pr := callTool[struct {
		Load string
		findingsAnswer
	}](t, cs, "run", map[string]any{"perf_pid": p.PID(), "load": appURL, "duration_seconds": 2, "warmup_seconds": 1, "concurrency": 4, "output": "perfrun"})
	if !strings.Contains(pr.Load, "req") || pr.Bundle != filepath.Join(out, "perfrun") {
		t.Errorf("run through perf: %+v", pr)
	}
	if top := callTool[struct{ Kind string }](t, cs, "top", map[string]any{"path": pr.Bundle, "n": 3}); top.Kind == "" {
		t.Errorf("top of the perf bundle: %+v", top)
	}
	for _, c := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"jvm_pid": p.PID(), "jfr_only": true, "duration_seconds": 1, "output": "notjvm"}, "is not a JVM"},
		{map[string]any{"perf_pid": 1 << 30, "duration_seconds": 1}, "no process"},
		{map[string]any{"perf_pid": p.PID(), "target": pprofURL}, "give one target"},
		{map[string]any{"target": pprofURL, "jfr_only": true}, "jfr_only goes with jvm_pid"},
	} {
		if msg := callError(t, cs, "collect", c.args); !strings.Contains(msg, c.want) {
			t.Errorf("collect %v: error %q, want one line with %q", c.args, msg, c.want)
		}
	}

	// A server measured through a load command (here curl, two requests a
	// run), as for protocols other than HTTP.
	if _, err := exec.LookPath("curl"); err == nil {
		u, err := url.Parse(appURL)
		if err != nil {
			t.Fatal(err)
		}
		addr := u.Host
		lv := callTool[struct {
			Verdict string
			Rounds  int
			Ratios  []struct{ Figure string }
		}](t, cs, "verify", map[string]any{"before": "tcp://" + addr, "after": "tcp://localhost:" + addr[strings.LastIndex(addr, ":")+1:],
			"rounds": 2, "duration_seconds": 1, "warmup_seconds": 1,
			"load_cmd": "curl -s -o /dev/null -o /dev/null http://{addr}/ http://{addr}/", "units": 2, "unit": "request"})
		if lv.Rounds != 2 || len(lv.Ratios) == 0 || lv.Ratios[0].Figure != "throughput" {
			t.Errorf("verify with a load command: %+v", lv)
		}
	}
	if msg := callError(t, cs, "verify", map[string]any{"before": appURL, "after": appURL + "?v=2", "load_cmd": "true"}); !strings.Contains(msg, "needs units") {
		t.Errorf("verify load_cmd without units: %q", msg)
	}

	// verify lasts at least 2 rounds × 2 sides × 2 s: longer than the
	// server's progress interval, so a client that asked hears from it.
	params := &mcp.CallToolParams{Name: "verify", Arguments: map[string]any{"before": appURL, "after": appURL + "?v=2",
		"rounds": 2, "duration_seconds": 1, "warmup_seconds": 1, "concurrency": 2}}
	params.SetProgressToken("verify-1")
	res, err := cs.CallTool(t.Context(), params)
	if err != nil {
		t.Fatalf("verify: %v", err)
	}
	if res.IsError {
		t.Fatalf("verify: %s", text(res))
	}
	var v struct {
		Verdict string
		Rounds  int
		Ratios  []struct{ Figure string }
	}
	if b, err := json.Marshal(res.StructuredContent); err != nil || json.Unmarshal(b, &v) != nil || len(b) > mcpserver.MaxAnswer {
		t.Errorf("verify answer: %v, %d bytes", err, len(b))
	}
	if v.Rounds != 2 || len(v.Ratios) == 0 || v.Verdict == "" {
		t.Errorf("verify: %+v", v)
	}
	select {
	case p := <-progress:
		if p.ProgressToken != "verify-1" || p.Progress <= 0 {
			t.Errorf("progress: %+v", p)
		}
	case <-time.After(10 * time.Second):
		t.Error("verify sent no progress to a client that asked for it")
	}
}
