package fleetreport

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/perfdoctor/perfdoctor/fleet"
	"github.com/perfdoctor/perfdoctor/internal/fleettest"
	"github.com/perfdoctor/perfdoctor/rules"
)

func sample() *fleet.Report {
	c, sc, one := 3.1, 11.8, 1.2
	start := time.Date(2026, 11, 24, 5, 0, 0, 0, time.UTC)
	return &fleet.Report{
		SchemaVersion: fleet.SchemaVersion, Tool: "perfdoctor test", Prometheus: "http://prom:9090", GroupBy: "job",
		Start: start, End: start.Add(14 * time.Second), Partial: true, Dir: "out",
		Plan: fleet.PlanSummary{Hottest: 3, Sample: 2, Seed: 7, Concurrency: 8, DurationSeconds: 10, TargetTimeoutSeconds: 40, BudgetSeconds: 600},
		Savings: []fleet.Saving{
			{Rank: 1, Service: "checkout", Rule: "GC001", Class: "gc-pressure", Severity: rules.High, Impact: 0.26, Resource: "cpu",
				ServiceCores: sc, Cores: &c, Summary: "GC takes 26% | of CPU <b>", Report: "checkout/report.html"},
			{Rank: 2, Service: "checkout", Rule: "MEM002", Class: "memory-growth", Severity: rules.Low, Impact: 0.4, Resource: "memory", ServiceCores: sc},
		},
		Services: []*fleet.ServiceDiag{{
			Name: "checkout", Cores: sc, CPUSource: fleet.CPUMixed, Collected: 1, ReportHTML: "checkout/report.html",
			Findings: []rules.Finding{{ID: "GC001", Rule: "GC001", Class: "gc-pressure", Impact: 0.26, Severity: rules.High, Resource: "cpu", Summary: "GC"}},
			Instances: []fleet.InstanceReport{
				{Instance: "10.0.0.1:9100", Health: "up", Cores: &one, CPUSource: fleet.CPUFromProfile, Picked: fleet.PickedHottest, Status: fleet.StatusOK,
					Bundle: "checkout/instances/10.0.0.1-9100", Top: &fleet.TopFinding{Class: "lock-contention", Impact: 0.2}, Outlier: "its own top finding is lock-contention"},
				{Instance: "10.0.0.2:9100", Health: "up", Picked: fleet.PickedSample, Status: fleet.StatusFailed, Error: "target unreachable"},
			},
		}},
	}
}

func TestFormats(t *testing.T) {
	r := sample()
	for format, want := range map[string][]string{
		"text": {"1. gc-pressure in checkout: ~3.1 of 11.8 cores  [high GC001]", "2. memory-growth in checkout: 40% of memory",
			"partial:", "outlier: its own top finding is lock-contention", "(target unreachable)", "1.20* cores", "* cores measured"},
		"markdown": {"| 1 | gc-pressure (GC001) | [checkout](checkout/report.html) | ~3.1 of 11.8 cores | high | GC takes 26% \\| of CPU &lt;b> |",
			"**Partial**", "| 10.0.0.2:9100 | ? | sample | failed: target unreachable |"},
		"html": {`<a href="checkout/report.html">checkout</a>`, "~3.1 of 11.8 cores", "GC takes 26% | of CPU &lt;b&gt;", `class="outlier"`,
			`<a href="checkout/instances/10.0.0.1-9100/">bundle</a>`, "Partial:"},
	} {
		var b bytes.Buffer
		if err := Write(&b, format, r); err != nil {
			t.Fatalf("%s: %v", format, err)
		}
		for _, w := range want {
			if !strings.Contains(b.String(), w) {
				t.Errorf("%s lacks %q:\n%s", format, w, b.String())
			}
		}
	}
	var b bytes.Buffer
	if err := Write(&b, "json", r); err != nil {
		t.Fatal(err)
	}
	var back fleet.Report
	if err := json.Unmarshal(b.Bytes(), &back); err != nil || back.Savings[0].Cores == nil || *back.Savings[0].Cores != 3.1 || back.Savings[1].Cores != nil {
		t.Errorf("JSON round trip: %v %+v", err, back.Savings)
	}
	if !strings.Contains(b.String(), `"cores": null`) || !strings.Contains(b.String(), `"severity": "high"`) {
		t.Errorf("JSON shape:\n%s", b.String())
	}
	if err := Write(&b, "pdf", r); err == nil {
		t.Error("unknown format: no error")
	}
}

func TestJSONSchema(t *testing.T) {
	schema := fleettest.FleetSchema(t, "../../docs")
	var b bytes.Buffer
	if err := WriteJSON(&b, sample()); err != nil {
		t.Fatal(err)
	}
	fleettest.ValidateFleetJSON(t, schema, b.Bytes())
	// The schema is no formality: a report missing a field fails it.
	bad := strings.Replace(b.String(), `"cpu_source": "prometheus+profile"`, `"cpu_source": "guessed"`, 1)
	var doc any
	if err := json.Unmarshal([]byte(bad), &doc); err != nil {
		t.Fatal(err)
	}
	if err := schema.Validate(doc); err == nil {
		t.Error("a report with an unknown cpu_source passes the schema")
	}
}
