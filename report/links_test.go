package report

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/perfdoctor/perfdoctor/facts"

	"github.com/google/pprof/profile"

	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/internal/testprof"
	"github.com/perfdoctor/perfdoctor/rules"
)

// linkedReport is a UDP forwarder's diagnosis: kernel time under
// net.DialUDP is connection churn's, so the kernel finding is its symptom.
func linkedReport(t *testing.T) *Report {
	t.Helper()
	ev := testprof.Evidence(map[evidence.Kind]*profile.Profile{evidence.CPU: testprof.Build(
		testprof.Stack{Value: 700, Funcs: []string{"syscall.Syscall", "net.DialUDP", "main.forward"}},
		testprof.Stack{Value: 100, Funcs: []string{"syscall.Syscall", "net.(*UDPConn).ReadFrom", "main.serve"}},
		testprof.Stack{Value: 200, Funcs: []string{"main.parse"}},
	)})
	claim := func(id, class string, level rules.Level, family evidence.Matcher, sev rules.Severity) *rules.Rule {
		return &rules.Rule{ID: id, Class: class, Needs: []rules.Input{rules.CPU}, Facts: []facts.Key{facts.CPUStacks}, Check: func(p *rules.Pass) error {
			cpu := facts.Get(p.Facts, facts.CPUStacks)
			p.Report(rules.Finding{Severity: sev, Resource: "cpu", Impact: cpu.Share(family), Summary: class + " summary", Fix: "fix it",
				Claim: &rules.Claim{Level: level, CPU: cpu.Has(family)}})
			return nil
		}}
	}
	res := rules.Run(facts.New(ev), []*rules.Rule{
		claim("NET003", "kernel-network-overhead", rules.LevelKernel, evidence.FuncPrefix("syscall.Syscall"), rules.High),
		claim("NET001", "connection-churn", rules.LevelCode, evidence.FuncPrefix("net.DialUDP"), rules.High),
		claim("CPU001", "hot-function", rules.LevelCode, evidence.FuncPrefix("main.parse"), rules.Low),
	})
	return New("perfdoctor test", facts.New(ev), res)
}

func TestSymptomsNestUnderTheirCause(t *testing.T) {
	r := linkedReport(t)
	if got := newRefs(r.Findings).label; strings.Join(got, ",") != "1,1.1,2" {
		t.Fatalf("labels %v for %+v", got, r.Findings)
	}
	var text, md, html, sarif bytes.Buffer
	for _, w := range []struct {
		buf   *bytes.Buffer
		write func(*bytes.Buffer, *Report) error
	}{
		{&text, func(b *bytes.Buffer, r *Report) error { return WriteText(b, r) }},
		{&md, func(b *bytes.Buffer, r *Report) error { return WriteMarkdown(b, r) }},
		{&html, func(b *bytes.Buffer, r *Report) error { return WriteHTML(b, r) }},
		{&sarif, func(b *bytes.Buffer, r *Report) error { return WriteSARIF(b, r) }},
	} {
		if err := w.write(w.buf, r); err != nil {
			t.Fatal(err)
		}
	}
	for _, want := range []string{
		"\n1. [HIGH] connection-churn (NET001)",
		"   Explains #1.1 kernel-network-overhead (NET003)",
		"\n   1.1. [HIGH] kernel-network-overhead (NET003)",
		"      A symptom of #1 connection-churn (NET001): 88% of the CPU it describes is explained by",
		"\n2. [LOW] hot-function (CPU001)",
	} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, text.String())
		}
	}
	for _, want := range []string{"| 1.1 | **high** | kernel-network-overhead | NET003 |", "↳ symptom of NET001", "#### 1.1. kernel-network-overhead", "_A symptom of #1 connection-churn (NET001)"} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("markdown lacks %q:\n%s", want, md.String())
		}
	}
	for _, want := range []string{`class="finding sev-high symptom" id="finding-2"`, `data-caused-by="NET001"`, `A symptom of <a href="#finding-1">#1 connection-churn (NET001)</a>`, `Explains <a href="#finding-2">#1.1 kernel-network-overhead (NET003)</a>`} {
		if !strings.Contains(html.String(), want) {
			t.Errorf("HTML lacks %q", want)
		}
	}
	var s struct {
		Runs []struct {
			Results []struct {
				Properties map[string]any `json:"properties"`
			} `json:"results"`
		} `json:"runs"`
	}
	if err := json.Unmarshal(sarif.Bytes(), &s); err != nil {
		t.Fatal(err)
	}
	if p := s.Runs[0].Results[1].Properties; p["causedBy"] != "NET001" || p["id"] != "NET003" {
		t.Errorf("SARIF result properties %v", p)
	}
	matchesSchema(t, "linked", r)
}
