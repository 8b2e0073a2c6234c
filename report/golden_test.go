package report

import (
	"bytes"
	"flag"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/rules"
	"github.com/perfdoctor/perfdoctor/rules/catalog"
)

var update = flag.Bool("update", false, "rewrite report/testdata/*.golden from the current output")

// fixedReport is a hand-made report with every field a reader sees and
// nothing that changes between runs (no times, no paths of this machine).
func fixedReport(variant string) *Report {
	r := &Report{
		SchemaVersion: SchemaVersion,
		Tool:          "perfdoctor 0.1.0-test",
		Catalog:       catalog.All(),
		Findings: []rules.Finding{
			{
				Rule: "GC001", Class: "gc-pressure", Severity: rules.High, Impact: 0.31, Resource: "cpu",
				ImpactBasis: "share of CPU samples with a GC frame on the stack; cutting allocations and giving the GC headroom together recover most of it",
				Summary:     "The garbage collector uses 31% of CPU, 12.3 GC cycles/s; top allocation site svc.(*Server).handle",
				Evidence: []rules.Fact{
					rules.Share("GC share of CPU", 0.31),
					rules.Count("GC cycles per second", 12.3, "/s"),
					rules.Bytes("live heap", 25<<20),
				},
				Fix:     "Cut allocations at the top alloc_objects sites first: GC work follows object counts. Then give the collector headroom with GOMEMLIMIT and a higher GOGC; the peak heap grows to about live × (1 + GOGC/100).",
				Example: "GOMEMLIMIT=900MiB GOGC=400 ./service",
				Caveats: []string{"A sync.Pool of buffers rarely helps: it saves bytes, not objects."},
				Locations: []rules.Location{
					{Function: "github.com/acme/svc.(*Server).handle", File: "/src/svc/server.go", Line: 133, Share: 0.62, Role: "allocation site"},
					{Function: "github.com/acme/svc.buildCache", File: "/src/svc/cache.go", Line: 84, Share: 0.05, Role: "allocation site"},
					{Function: "encoding/json.Marshal", File: "/usr/local/go/src/encoding/json/encode.go", Line: 161, Share: 0.04, Role: "allocation site"},
					{Function: "github.com/acme/svc.render", Share: 0.02, Role: "allocation site"},
				},
				Frames:     []string{"runtime.gcBgMarkWorker", "runtime.gcDrain"},
				References: []string{"https://go.dev/doc/gc-guide"},
			},
			{
				Rule: "NET001", Class: "connection-churn", Severity: rules.Medium, Impact: 0.12, Resource: "cpu",
				ImpactBasis: "share of CPU samples dialling or closing outbound connections",
				Summary:     "UDP connections are dialled and closed per request | 12% of CPU (from main.send)",
				Evidence:    []rules.Fact{rules.Share("dial share of CPU", 0.12), rules.Text("protocol", "UDP")},
				Fix:         "Keep connected UDP sockets and reuse them.",
				Example:     "conn := pool.Get(dst)\nconn.Write(b)\npool.Put(dst, conn)",
				Locations:   []rules.Location{{Function: "main.send", File: "/src/svc/main.go", Line: 50, Share: 0.12, Role: "code that dials"}},
				Frames:      []string{"net.DialUDP"},
			},
			{
				Rule: "CPU001", Class: "hot-function", Severity: rules.Low, Impact: 0.089, Resource: "cpu",
				ImpactBasis: "half of the CPU charged to the function",
				Summary:     "svc.score uses 18% of CPU",
				Fix:         "Read the named lines.",
				Locations:   []rules.Location{{Function: "github.com/acme/svc.score", File: "/src/svc/score.go", Line: 135, Share: 0.061, Role: "hot line"}},
			},
			{
				Rule: "SCHED001", Class: "scheduler-overhead", Severity: rules.Info, Impact: 0.004, Resource: "latency",
				ImpactBasis: "scheduler share of CPU",
				Summary:     "The scheduler takes 0.4% of CPU",
				Fix:         "Nothing to do.",
			},
		},
		NotChecked: []rules.NotChecked{{Rule: "LOCK001", Class: "lock-contention", Missing: []rules.Input{rules.Mutex},
			Reason: "needs mutex", Collect: []string{"a mutex profile (runtime.SetMutexProfileFraction > 0, /debug/pprof/mutex)"}}},
		Inputs: Inputs{
			Sources: []string{"./b1"}, Target: "http://127.0.0.1:6060/debug/pprof/",
			Profiles: []string{"allocs", "cpu", "heap"}, CPUSamples: 1874, WindowSeconds: 10,
			Metrics: true, System: true, Trace: true, Load: true,
			Failed: []FailedItem{}, Skipped: []evidence.File{},
		},
	}
	switch variant {
	case "no_findings":
		r.Findings = []rules.Finding{}
		r.NotChecked = []rules.NotChecked{}
	case "partial":
		r.Findings = r.Findings[:1]
		r.Inputs.Partial = true
		r.Inputs.Failed = []FailedItem{{Name: "trace.out", Error: "context deadline exceeded"}}
		r.Inputs.Skipped = []evidence.File{{Path: "./b1/notes.txt", Reason: "not a format perfdoctor reads"}}
	}
	return r
}

// TestGolden pins the text and Markdown output, one file per format,
// option set and fixture. Regenerate with: go test ./report -run Golden -update
func TestGolden(t *testing.T) {
	cases := []struct {
		name    string
		variant string
		write   func(io.Writer, *Report) error
	}{
		{"text", "", WriteText},
		{"text_no_findings", "no_findings", WriteText},
		{"text_partial", "partial", WriteText},
		{"markdown", "", WriteMarkdown},
		{"markdown_top1", "", func(w io.Writer, r *Report) error { return WriteMarkdownWith(w, r, MarkdownOptions{Top: 1}) }},
		{"markdown_top10", "", func(w io.Writer, r *Report) error { return WriteMarkdownWith(w, r, MarkdownOptions{Top: 10}) }},
		{"markdown_no_findings", "no_findings", WriteMarkdown},
		{"markdown_partial", "partial", WriteMarkdown},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := c.write(&buf, fixedReport(c.variant)); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join("testdata", c.name+".golden")
			if *update {
				if err := os.MkdirAll("testdata", 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run: go test ./report -run Golden -update)", err)
			}
			if !bytes.Equal(buf.Bytes(), want) {
				t.Errorf("%s differs from %s (if the change is intended: go test ./report -run Golden -update)\n--- got:\n%s", c.name, path, buf.String())
			}
		})
	}
}
