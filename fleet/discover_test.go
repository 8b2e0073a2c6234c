package fleet

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/perfdoctor/perfdoctor/rules"
)

func TestPprofEndpoint(t *testing.T) {
	for _, tc := range []struct {
		scrape string
		hints  []string
		want   string
		err    string
	}{
		{"http://10.0.0.7:9100/metrics", nil, "http://10.0.0.7:9100/debug/pprof/", ""},
		{"http://10.0.0.7:9100/metrics", []string{"", ""}, "http://10.0.0.7:9100/debug/pprof/", ""},
		{"http://10.0.0.7:9100/metrics", []string{"6060"}, "http://10.0.0.7:6060/debug/pprof/", ""},
		{"http://[::1]:9100/metrics", []string{"6060"}, "http://[::1]:6060/debug/pprof/", ""},
		{"https://api-1:8443/metrics", []string{"/internal/debug/pprof/"}, "https://api-1:8443/internal/debug/pprof/", ""},
		{"http://10.0.0.7:9100/metrics", []string{"http://10.0.0.7:7070/debug/pprof/"}, "http://10.0.0.7:7070/debug/pprof/", ""},
		// The label wins over the annotation.
		{"http://10.0.0.7:9100/metrics", []string{"6060", "7070"}, "http://10.0.0.7:6060/debug/pprof/", ""},
		{"http://10.0.0.7:9100/metrics", []string{"", "7070"}, "http://10.0.0.7:7070/debug/pprof/", ""},
		{"http://u:pw@10.0.0.7:9100/metrics", nil, "http://u:pw@10.0.0.7:9100/debug/pprof/", ""},
		{"http://10.0.0.7:9100/metrics", []string{"pprof-please"}, "", "want a port, a /path or an http(s) URL"},
		{"http://10.0.0.7:9100/metrics", []string{"70000"}, "", "want a port"},
		{"/metrics", nil, "", "has no host"},
	} {
		got, err := PprofEndpoint(tc.scrape, tc.hints...)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("PprofEndpoint(%q, %q) error %v, want %q", tc.scrape, tc.hints, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("PprofEndpoint(%q, %q) = %q, %v; want %q", tc.scrape, tc.hints, got, err, tc.want)
		}
	}
}

func TestMatchers(t *testing.T) {
	labels := map[string]string{"job": "api-checkout", "team": "payments", "env": "prod"}
	for _, tc := range []struct {
		in     string
		match  bool
		promql string
	}{
		{``, true, ``},
		{`team="payments"`, true, `team="payments"`},
		{`{team="payments", env!="dev"}`, true, `team="payments",env!="dev"`},
		{`job=~"api-.*"`, true, `job=~"api-.*"`},
		{`job=~"api"`, false, `job=~"api"`}, // anchored, as in PromQL
		{`job!~"api-.*"`, false, `job!~"api-.*"`},
		{`zone=""`, true, `zone=""`}, // absent is empty
		{`team=payments`, true, `team="payments"`},
		{`team="pay\"ments"`, false, `team="pay\"ments"`},
	} {
		ms, err := ParseMatchers(tc.in)
		if err != nil {
			t.Errorf("ParseMatchers(%q): %v", tc.in, err)
			continue
		}
		if got := ms.Select(labels); got != tc.match {
			t.Errorf("%q selects %v, want %v", tc.in, got, tc.match)
		}
		if got := ms.PromQL(); got != tc.promql {
			t.Errorf("%q as PromQL %q, want %q", tc.in, got, tc.promql)
		}
	}
	for _, bad := range []string{`team`, `team=="x"`, `9x="y"`, `job=~"("`, `team="x" env="y"`, `team="unterminated`} {
		if _, err := ParseMatchers(bad); err == nil {
			t.Errorf("ParseMatchers(%q): no error", bad)
		}
	}
}

func FuzzParseMatchers(f *testing.F) {
	for _, s := range []string{`team="payments"`, `{job=~"api-.*",env!="dev"}`, `a!~"x|y"`, `a=b,c="d"`, `x="\u00e9\\"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ms, err := ParseMatchers(s)
		if err != nil {
			return
		}
		// What parses writes back as PromQL that parses to the same matchers.
		again, err := ParseMatchers(ms.PromQL())
		if err != nil || again.PromQL() != ms.PromQL() {
			t.Fatalf("%q -> %q -> %v %v", s, ms.PromQL(), again, err)
		}
		ms.Select(map[string]string{"a": "x"})
	})
}

func service(n int, withCPU func(i int) float64) *Service {
	s := &Service{Name: "svc"}
	for i := 0; i < n; i++ {
		s.Instances = append(s.Instances, &Instance{Service: "svc", Name: string(rune('a' + i)), pprofRaw: "http://x/debug/pprof/", Health: "up", CPU: withCPU(i)})
	}
	return s
}

func TestPick(t *testing.T) {
	s := service(10, func(i int) float64 { return float64(10 - i) }) // sorted hottest first, as Discover leaves them
	s.Instances[1].Health = "down"
	s.Instances[2].pprofRaw = ""
	rng := rand.New(rand.NewPCG(1, 2))
	cs := Pick(s, 3, 2, rng)
	var hot, sample []string
	for _, c := range cs {
		switch c.Picked {
		case PickedHottest:
			hot = append(hot, c.Name)
		case PickedSample:
			sample = append(sample, c.Name)
		}
	}
	if strings.Join(hot, "") != "ade" {
		t.Errorf("hottest %v, want a, d, e (b is down, c has no endpoint)", hot)
	}
	if len(sample) != 2 {
		t.Errorf("sample %v, want 2 of f..j", sample)
	}
	for _, n := range sample {
		if n < "f" {
			t.Errorf("sample %v holds a hot or unusable instance", sample)
		}
	}
	if cs[1].Status != StatusSkipped || !strings.Contains(cs[1].Error, "down") || cs[2].Status != StatusSkipped {
		t.Errorf("down and endpoint-less instances: %+v %+v", cs[1], cs[2])
	}
	// More asked than there are: all of them, once.
	if cs := Pick(service(2, func(int) float64 { return 1 }), 3, 5, rng); cs[0].Picked != PickedHottest || cs[1].Picked != PickedHottest {
		t.Errorf("small service: %+v %+v", cs[0], cs[1])
	}
}

func ptr(v float64) *float64 { return &v }

func TestServiceCores(t *testing.T) {
	all := []InstanceReport{{Cores: ptr(1), CPUSource: CPUFromPrometheus}, {Cores: ptr(3), CPUSource: CPUFromPrometheus}}
	if c, src := serviceCores(all); c != 4 || src != CPUFromPrometheus {
		t.Errorf("%v %s", c, src)
	}
	// Unknown instances weigh the mean of the known ones.
	some := append(all, InstanceReport{}, InstanceReport{Cores: ptr(2), CPUSource: CPUFromProfile})
	if c, src := serviceCores(some); c != 8 || src != CPUMixed {
		t.Errorf("%v %s, want 8 prometheus+profile", c, src)
	}
	if c, src := serviceCores([]InstanceReport{{}}); c != 0 || src != CPUUnknown {
		t.Errorf("%v %s", c, src)
	}
}

func TestRankSavings(t *testing.T) {
	services := []*ServiceDiag{
		{Name: "search", Cores: 40, Findings: []rules.Finding{{Class: "hot-function", Impact: 0.05, Resource: "cpu"}, {Class: "memory-growth", Impact: 0.9, Resource: "memory"}}},
		{Name: "checkout", Cores: 11.8, Findings: []rules.Finding{{Class: "gc-pressure", Impact: 0.26, Resource: "cpu"}}},
	}
	got := rankSavings(services)
	var order []string
	for _, s := range got {
		order = append(order, s.Class+"@"+s.Service)
	}
	// 0.26 x 11.8 = 3.07 cores beats 0.05 x 40 = 2; memory ranks after CPU.
	if strings.Join(order, " ") != "gc-pressure@checkout hot-function@search memory-growth@search" {
		t.Errorf("order %v", order)
	}
	if c := *got[0].Cores; c < 3.06 || c > 3.08 || got[0].Rank != 1 || got[2].Cores != nil {
		t.Errorf("savings %+v", got)
	}
}

func TestOutliers(t *testing.T) {
	sd := &ServiceDiag{Findings: []rules.Finding{{Class: "gc-pressure", Impact: 0.3}}, Instances: []InstanceReport{
		{Instance: "a", Cores: ptr(1), Top: &TopFinding{Class: "gc-pressure", Impact: 0.3}},
		{Instance: "b", Cores: ptr(1.1), Top: &TopFinding{Class: "lock-contention", Impact: 0.2}},
		{Instance: "c", Cores: ptr(0.9), Top: &TopFinding{Class: "hot-function", Impact: 0.02}},
		{Instance: "d", Cores: ptr(3), Top: &TopFinding{Class: "gc-pressure", Impact: 0.3}},
	}}
	markOutliers(sd)
	if sd.Instances[0].Outlier != "" || sd.Instances[2].Outlier != "" {
		t.Errorf("a (like the service) or c (below %v) marked: %+v", minOutlierImpact, sd.Instances)
	}
	if !strings.Contains(sd.Instances[1].Outlier, "lock-contention") {
		t.Errorf("b's own top finding not reported: %q", sd.Instances[1].Outlier)
	}
	if !strings.Contains(sd.Instances[3].Outlier, "median") {
		t.Errorf("d at 3x the median not reported: %q", sd.Instances[3].Outlier)
	}
}
