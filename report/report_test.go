package report

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/perfdoctor/perfdoctor/facts"

	"github.com/google/pprof/profile"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/perfdoctor/perfdoctor/bundle"
	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/internal/testprof"
	"github.com/perfdoctor/perfdoctor/load"
	"github.com/perfdoctor/perfdoctor/rules"
	"github.com/perfdoctor/perfdoctor/rules/catalog"
)

func sampleReport(t *testing.T) *Report {
	t.Helper()
	cpu := testprof.Build(
		testprof.Stack{Value: 300, Funcs: []string{"runtime.scanObject", "runtime.gcBgMarkWorker"}},
		testprof.Stack{Value: 250, Funcs: []string{"net.(*netFD).connect", "net.DialUDP", "main.send"}},
		testprof.Stack{Value: 450, Funcs: []string{"main.work"}},
	)
	ev := testprof.Evidence(map[evidence.Kind]*profile.Profile{evidence.CPU: cpu})
	return diagnosed("perfdoctor test", ev)
}

func TestJSONMatchesSchema(t *testing.T) {
	for name, rep := range map[string]*Report{"plain": sampleReport(t), "with load": reportWithLoad(t), "with build info": reportWithBuild(t)} {
		matchesSchema(t, name, rep)
	}
}

// matchesSchema checks rep's JSON report against docs/report.schema.json.
func matchesSchema(t *testing.T, what string, rep *Report) {
	t.Helper()
	schema, err := jsonschema.NewCompiler().Compile("../docs/report.schema.json")
	if err != nil {
		t.Fatalf("schema: %v", err)
	}
	var buf bytes.Buffer
	if err := WriteJSON(&buf, rep); err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if err := schema.Validate(doc); err != nil {
		t.Errorf("%s: report does not match docs/report.schema.json: %v", what, err)
	}
}

// reportWithBuild is sampleReport's evidence with build information whose
// every field is set, and a unit of work whose every field is set, so a
// field added to bundle.BuildInfo or facts.Work without the schema fails
// here, not first in a live run's report.
func reportWithBuild(t *testing.T) *Report {
	t.Helper()
	b := &bundle.BuildInfo{}
	setEveryField(t, b)
	rep := sampleReport(t)
	rep.Evidence.SystemEnd = &bundle.SystemSnapshot{Time: time.Now(), Process: &bundle.ProcessInfo{Build: b}}
	rep = New(rep.Tool, facts.New(rep.Evidence), rules.Result{Findings: rep.Findings, NotChecked: rep.NotChecked})
	if rep.Inputs.Build != b {
		t.Fatalf("build information not in the report's inputs: %+v", rep.Inputs)
	}
	w := &facts.Work{}
	setEveryField(t, w)
	rep.Inputs.Work = w
	return rep
}

// setEveryField gives each field of the struct v points to a value its
// JSON form shows (not omitted as empty).
func setEveryField(t *testing.T, v any) {
	t.Helper()
	s := reflect.ValueOf(v).Elem()
	for i := range s.NumField() {
		switch f := s.Field(i); f.Kind() {
		case reflect.String:
			f.SetString("x")
		case reflect.Bool:
			f.SetBool(true)
		case reflect.Int, reflect.Int64:
			f.SetInt(1)
		case reflect.Float64:
			f.SetFloat(1)
		case reflect.Slice:
			f.Set(reflect.ValueOf([]string{"x"}))
		default:
			t.Fatalf("%s.%s: set a value of kind %s here", s.Type().Name(), s.Type().Field(i).Name, f.Kind())
		}
	}
}

// reportWithLoad is sampleReport's evidence plus a real open-loop load.json
// from a 2 s run against a local server.
func reportWithLoad(t *testing.T) *Report {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer srv.Close()
	res, err := load.Run(context.Background(), load.Config{URL: srv.URL, Concurrency: 4, Rate: 200, Duration: 2100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	rep := sampleReport(t)
	rep.Evidence.Load = res.Schema()
	rep = New(rep.Tool, facts.New(rep.Evidence), rules.Result{Findings: rep.Findings, NotChecked: rep.NotChecked})
	if rep.Load == nil || rep.Load.Mode != "open" || len(rep.Load.Timeline) < 2 || rep.Load.Service.P99 == 0 {
		t.Fatalf("load figures not read: %+v", rep.Load)
	}
	return rep
}

func TestLoadInEveryFormat(t *testing.T) {
	rep := reportWithLoad(t)
	for format, want := range map[string][]string{
		"text":     {"load: open loop at 200 req/s", "load per second (req/p99):"},
		"markdown": {"Load: open loop at 200 req/s", "| second | ok | errors |"},
		"html":     {`id="load"`, `<svg class="timeline"`, "<polyline points=", "req/s due"},
		"json":     {`"load": {`, `"timeline": [`, `"dropped_sends"`},
	} {
		var buf bytes.Buffer
		if err := Write(&buf, format, rep); err != nil {
			t.Fatal(err)
		}
		for _, w := range want {
			if !strings.Contains(buf.String(), w) {
				t.Errorf("%s report lacks %q", format, w)
			}
		}
	}
}

func TestJSONIsRanked(t *testing.T) {
	var buf bytes.Buffer
	WriteJSON(&buf, sampleReport(t))
	var doc struct {
		Findings []struct {
			Class  string
			Impact float64
		}
	}
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	// Both high: the order is the estimates'. The collector's 30% is
	// estimated at 1.3 times (what measured fixes removed beyond their
	// frames, rules.Estimated), above keeping the connections at 1.5 times
	// the dial's 25% (what a connection drags, rules.WithConnectionDrag).
	if len(doc.Findings) < 2 || doc.Findings[0].Class != "gc-pressure" || doc.Findings[1].Class != "connection-churn" ||
		doc.Findings[0].Impact < doc.Findings[1].Impact {
		t.Fatalf("findings = %+v", doc.Findings)
	}
}

func TestTextPutsTheVerdictFirst(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteText(&buf, sampleReport(t)); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	first := strings.Index(out, "gc-pressure")
	second := strings.Index(out, "connection-churn")
	if first < 0 || second < first || !strings.Contains(out, "[HIGH]") || !strings.Contains(out, "Fix:") {
		t.Errorf("text report:\n%s", out)
	}
}

func TestUnknownFormat(t *testing.T) {
	if err := Write(&bytes.Buffer{}, "yaml", sampleReport(t)); err == nil || !strings.Contains(err.Error(), "json, markdown, sarif, text") {
		t.Errorf("err = %v", err)
	}
}

// TestTriedInEveryFormat: a finding that perfdoctor try measured shows the
// trial in each report.
func TestTriedInEveryFormat(t *testing.T) {
	rep := sampleReport(t)
	if len(rep.Findings) == 0 {
		t.Fatal("no findings")
	}
	rep.Findings[0].Tried = &rules.Trial{Config: "GOMEMLIMIT=921MiB GOGC=2000", Rounds: 4, PredictedGain: 0.366, Verdict: "faster",
		CPUGain:        &rules.Interval{Estimate: 0.349, Low: 0.275, High: 0.415},
		ThroughputGain: rules.Interval{Estimate: 0.4, Low: 0.2, High: 0.6}, PeakRSSCurrent: 66 << 20, PeakRSSPrescribed: 611 << 20,
		Prediction: "within"}
	for format, want := range map[string]string{
		"text":     "Tried: GOMEMLIMIT=921MiB GOGC=2000 over 4 rounds",
		"markdown": "**Tried:** GOMEMLIMIT=921MiB GOGC=2000 over 4 rounds against the current configuration: CPU per request saved +34.9% [+27.5%, +41.5%], predicted +36.6% (within the interval)",
		"html":     "<b>Tried:</b> GOMEMLIMIT=921MiB GOGC=2000",
		"json":     `"tried": {`,
	} {
		var buf bytes.Buffer
		if err := Write(&buf, format, rep); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(buf.String(), want) {
			t.Errorf("%s lacks %q", format, want)
		}
	}
}

func TestReadJSON(t *testing.T) {
	rep := sampleReport(t)
	path := filepath.Join(t.TempDir(), "report.json")
	var buf bytes.Buffer
	if err := WriteJSON(&buf, rep); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(path, buf.Bytes(), 0o644)
	back, err := ReadJSON(path)
	if err != nil || len(back.Findings) != len(rep.Findings) || back.Findings[0].ID != rep.Findings[0].ID || back.Findings[0].Severity != rep.Findings[0].Severity {
		t.Fatalf("read back %+v, %v", back, err)
	}
	os.WriteFile(path, []byte(`{"findings": []}`), 0o644)
	if _, err := ReadJSON(path); err == nil {
		t.Error("a document without schema_version accepted")
	}
}

// diagnosed is the report of the whole catalog over ev, with one set of
// facts shared by the rules and the report, as diagnose.Run makes it.
func diagnosed(tool string, ev *evidence.Evidence) *Report {
	set := facts.New(ev)
	return New(tool, set, rules.Run(set, catalog.All()))
}

// A recording that slowed the service (its warm-up ran 3x faster just
// before it) is said in every report; one that cost a few percent is not.
func TestRecordingSlowdownIsSaid(t *testing.T) {
	for _, tc := range []struct {
		warmup float64
		said   bool
	}{{3000, true}, {1100, false}} {
		rep := sampleReport(t)
		rep.Evidence.Load = &bundle.LoadResult{URL: "tcp://127.0.0.1:5432", Mode: "command", DurationMS: 20000, Requests: 20000, Throughput: 1000,
			Unit: "INSERT", Warmup: &bundle.LoadWarmup{DurationMS: 5000, Requests: int64(tc.warmup * 5), Throughput: tc.warmup}}
		rep = New(rep.Tool, facts.New(rep.Evidence), rules.Result{Findings: rep.Findings, NotChecked: rep.NotChecked})
		var buf bytes.Buffer
		if err := WriteText(&buf, rep); err != nil {
			t.Fatal(err)
		}
		said := strings.Contains(buf.String(), "warning: the recording slowed the service 3.0x: 1000 INSERTs/s in the window against 3000/s in the unrecorded warm-up")
		if said != tc.said {
			t.Errorf("warm-up at %.0f/s, window at 1,000/s: said %v, want %v\n%s", tc.warmup, said, tc.said, buf.String())
		}
		if rep.Inputs.Work == nil || rep.Inputs.Work.WarmupPerSecond != tc.warmup {
			t.Errorf("work: %+v", rep.Inputs.Work)
		}
		matchesSchema(t, "with a warm-up", rep)
	}
}
