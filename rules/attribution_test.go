package rules_test

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/perfdoctor/perfdoctor/bundle"
	"github.com/perfdoctor/perfdoctor/facts"

	"github.com/google/pprof/profile"

	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/internal/testprof"
	"github.com/perfdoctor/perfdoctor/rules"
)

// finding is a test rule reporting one finding.
func finding(id string, f rules.Finding) *rules.Rule {
	return &rules.Rule{ID: id, Class: "hot-function", Needs: []rules.Input{rules.CPU}, Check: func(p *rules.Pass) error {
		p.Report(f)
		return nil
	}}
}

// claiming reports a CPU finding whose impact is the share of samples with
// a frame matching family, claimed at the given level.
func claiming(id string, level rules.Level, family evidence.Matcher, sev rules.Severity) *rules.Rule {
	return &rules.Rule{ID: id, Class: "hot-function", Needs: []rules.Input{rules.CPU}, Facts: []facts.Key{facts.CPUStacks}, Check: func(p *rules.Pass) error {
		cpu := facts.Get(p.Facts, facts.CPUStacks)
		p.Report(rules.Finding{Severity: sev, Resource: "cpu", Impact: cpu.Share(family),
			Claim: &rules.Claim{Level: level, CPU: cpu.Has(family)}})
		return nil
	}}
}

func ids(fs []rules.Finding) string {
	var out []string
	for _, f := range fs {
		out = append(out, f.ID)
	}
	return strings.Join(out, ",")
}

func TestRankBySeverityThenImpact(t *testing.T) {
	res := rules.Run(facts.New(cpuEvidence()), []*rules.Rule{
		finding("A", rules.Finding{Impact: 0.10, Severity: rules.Low, Resource: "cpu"}),
		finding("B", rules.Finding{Impact: 0.30, Severity: rules.Medium, Resource: "cpu"}),
		finding("C", rules.Finding{Impact: 0.10, Severity: rules.High, Resource: "cpu"}),
		finding("D", rules.Finding{Impact: 0.20, Severity: rules.Medium, Resource: "cpu"}),
	})
	if got := ids(res.Findings); got != "C,B,D,A" {
		t.Errorf("rank = %s, want C,B,D,A", got)
	}
}

// In a process on under half of its CPUs, its waits set its throughput:
// at one severity latency comes first, then CPU (PHP-FPM on 0.064 of 2
// cores, its children's queue over a connection per request's CPU). A
// process on more than half keeps CPU first.
func TestRankAcrossResourcesWhenWaitBound(t *testing.T) {
	for _, c := range []struct {
		cpuSeconds float64 // over 10 s, of 2 cores
		want       string
	}{{0.64, "LAT,CPU"}, {12, "CPU,LAT"}} {
		ev := cpuEvidence()
		at := time.Date(2026, 11, 28, 6, 0, 0, 0, time.UTC)
		snap := func(after time.Duration, cpu float64) *bundle.SystemSnapshot {
			return &bundle.SystemSnapshot{Time: at.Add(after), Machine: bundle.MachineInfo{NumCPU: 2},
				Process: &bundle.ProcessInfo{PID: 10, Comm: "server", StartTime: 1, UserCPUSeconds: cpu}}
		}
		ev.SystemStart, ev.SystemEnd = snap(0, 1), snap(10*time.Second, 1+c.cpuSeconds)
		res := rules.Run(facts.New(ev), []*rules.Rule{
			finding("CPU", rules.Finding{Impact: 0.79, Severity: rules.High, Resource: "cpu"}),
			finding("LAT", rules.Finding{Impact: 0.94, Severity: rules.High, Resource: "latency"}),
		})
		if got := ids(res.Findings); got != c.want {
			t.Errorf("%.2f cores of 2: rank = %s, want %s", c.cpuSeconds/10, got, c.want)
		}
	}
}

// A memory or latency fraction is never weighed against a CPU share: at one
// severity CPU comes first, then latency, then memory, whatever the numbers.
func TestRankAcrossResources(t *testing.T) {
	res := rules.Run(facts.New(cpuEvidence()), []*rules.Rule{
		finding("MEM", rules.Finding{Impact: 0.81, Severity: rules.High, Resource: "memory"}),
		finding("LAT", rules.Finding{Impact: 0.82, Severity: rules.High, Resource: "latency"}),
		finding("CPU", rules.Finding{Impact: 0.57, Severity: rules.High, Resource: "cpu"}),
		finding("CPU2", rules.Finding{Impact: 0.60, Severity: rules.Medium, Resource: "cpu"}),
		finding("MEM2", rules.Finding{Impact: 0.90, Severity: rules.Low, Resource: "memory"}),
	})
	if got := ids(res.Findings); got != "CPU,LAT,MEM,CPU2,MEM2" {
		t.Errorf("rank = %s, want CPU,LAT,MEM,CPU2,MEM2", got)
	}
}

// kernelUnderDial is a UDP forwarder's profile: most system call time is
// under net.DialUDP and Close, a little under the read loop.
func kernelUnderDial() *evidence.Evidence {
	return testprof.Evidence(map[evidence.Kind]*profile.Profile{evidence.CPU: testprof.Build(
		testprof.Stack{Value: 600, Funcs: []string{"syscall.Syscall", "net.(*netFD).connect", "net.DialUDP", "main.forward"}},
		testprof.Stack{Value: 200, Funcs: []string{"syscall.Syscall", "net.(*conn).Close", "main.forward"}},
		testprof.Stack{Value: 100, Funcs: []string{"syscall.Syscall", "net.(*UDPConn).ReadFrom", "main.serve"}},
		testprof.Stack{Value: 100, Funcs: []string{"main.parse", "main.serve"}},
	)})
}

func TestOneCostOneOwnerAndSymptomUnderCause(t *testing.T) {
	dial := evidence.FuncPrefix("net.DialUDP", "net.(*conn).Close")
	res := rules.Run(facts.New(kernelUnderDial()), []*rules.Rule{
		claiming("NET003", rules.LevelKernel, evidence.FuncPrefix("syscall.Syscall"), rules.High),
		claiming("NET001", rules.LevelCode, dial, rules.Medium),
	})
	if got := ids(res.Findings); got != "NET001,NET003" {
		t.Fatalf("rank = %s, want the cause first and its symptom under it", got)
	}
	cause, symptom := res.Findings[0], res.Findings[1]
	if symptom.CausedBy != "NET001" || len(cause.Explains) != 1 || cause.Explains[0] != "NET003" || symptom.CauseReason == "" {
		t.Errorf("links: cause %+v explains %v; symptom caused by %q (%q)", cause.ID, cause.Explains, symptom.CausedBy, symptom.CauseReason)
	}
	// 900 samples in syscalls, 800 of them under the dial: the kernel
	// finding keeps the 100 in the read loop. The cause's fix is estimated
	// at 1.3 times its share and its symptom's (at most 95%), the symptom
	// keeping what it owns: 0.95 - 0.1.
	if math.Abs(cause.Impact-0.85) > 1e-9 || math.Abs(symptom.Impact-0.1) > 1e-9 {
		t.Errorf("impacts %.3f (cause), %.3f (symptom), want 0.85 and 0.1", cause.Impact, symptom.Impact)
	}
	if c := symptom.Cost; c == nil || c.Level != rules.LevelKernel || math.Abs(c.CPUClaimed-0.9) > 1e-9 || math.Abs(c.CPUOwned-0.1) > 1e-9 {
		t.Errorf("symptom cost %+v", symptom.Cost)
	}
	if sum := cause.Impact + symptom.Impact; sum > 1 {
		t.Errorf("CPU impacts sum to %.2f", sum)
	}
}

// A finding that loses only part of its cost to a more specific one keeps
// the rest and stays a finding of its own.
func TestPartialOverlapIsNotASymptom(t *testing.T) {
	res := rules.Run(facts.New(kernelUnderDial()), []*rules.Rule{
		claiming("K", rules.LevelKernel, evidence.FuncPrefix("syscall.Syscall"), rules.High),
		claiming("R", rules.LevelCode, evidence.FuncPrefix("net.(*UDPConn).ReadFrom"), rules.Medium),
	})
	for _, f := range res.Findings {
		if f.CausedBy != "" {
			t.Errorf("%s linked to %s after losing 1/9 of its cost", f.ID, f.CausedBy)
		}
	}
	if got := ids(res.Findings); got != "K,R" {
		t.Errorf("rank = %s", got)
	}
}

// Findings at the same level split a shared sample by the narrower claim
// and are never linked: neither is the other's cause.
func TestSameLevelOverlapSplitsWithoutLinks(t *testing.T) {
	res := rules.Run(facts.New(kernelUnderDial()), []*rules.Rule{
		claiming("WIDE", rules.LevelCode, evidence.FuncPrefix("main."), rules.High),
		claiming("NARROW", rules.LevelCode, evidence.FuncPrefix("main.parse"), rules.Low),
	})
	var sum float64
	for _, f := range res.Findings {
		sum += f.Impact
		if f.CausedBy != "" {
			t.Errorf("%s linked to %s", f.ID, f.CausedBy)
		}
	}
	if math.Abs(sum-1) > 1e-9 {
		t.Errorf("impacts sum to %.3f, want 1 (every sample once)", sum)
	}
}

// Estimates not drawn from samples are scaled so the CPU shares of one
// diagnosis never exceed 100%.
func TestCPUImpactsNeverSumAboveOne(t *testing.T) {
	res := rules.Run(facts.New(kernelUnderDial()), []*rules.Rule{
		claiming("CODE", rules.LevelCode, evidence.FuncPrefix("net.DialUDP"), rules.High),
		finding("PROC", rules.Finding{Impact: 0.9, Severity: rules.High, Resource: "cpu"}),
		finding("MEM", rules.Finding{Impact: 0.9, Severity: rules.High, Resource: "memory"}),
	})
	var cpu float64
	for _, f := range res.Findings {
		if f.Resource == "cpu" {
			cpu += f.Impact
		}
	}
	if cpu > 1+1e-9 {
		t.Errorf("CPU impacts sum to %.3f", cpu)
	}
	// The sampled finding keeps its estimate (1.3 times its 60%): the one
	// read from other evidence gives way.
	if res.Findings[0].ID != "CODE" || math.Abs(res.Findings[0].Impact-rules.Estimated(0.6)) > 1e-9 {
		t.Errorf("the sampled finding changed: %+v", res.Findings[0])
	}
}

// A GOMAXPROCS above the CPUs (a setting) owns the scheduler's time over the
// goroutine churn that shows in it too.
func TestConfigOwnsRuntimeMechanism(t *testing.T) {
	ev := testprof.Evidence(map[evidence.Kind]*profile.Profile{evidence.CPU: testprof.Build(
		testprof.Stack{Value: 280, Funcs: []string{"runtime.findRunnable", "runtime.schedule"}},
		testprof.Stack{Value: 50, Funcs: []string{"runtime.newproc1", "main.fanout"}},
		testprof.Stack{Value: 670, Funcs: []string{"main.work"}},
	)})
	sched := evidence.FuncPrefix("runtime.schedule", "runtime.findRunnable")
	res := rules.Run(facts.New(ev), []*rules.Rule{
		claiming("SCHED002", rules.LevelRuntime, evidence.Any(sched, evidence.FuncPrefix("runtime.newproc")), rules.High),
		claiming("SCHED001", rules.LevelConfig, sched, rules.High),
	})
	if got := ids(res.Findings); got != "SCHED001,SCHED002" {
		t.Fatalf("rank = %s", got)
	}
	if res.Findings[1].CausedBy != "SCHED001" {
		t.Errorf("churn not linked to oversubscription: %+v", res.Findings[1])
	}
}

// GC cost follows the site that allocates most of the window's bytes.
func TestAllocationDrivenCostLinksToTheSite(t *testing.T) {
	allocs := testprof.Build(
		testprof.Stack{Value: 70, Funcs: []string{"runtime.mallocgc", "compress/flate.NewWriter", "main.handle"}},
		testprof.Stack{Value: 30, Funcs: []string{"runtime.mallocgc", "main.other"}},
	)
	allocs.SampleType = []*profile.ValueType{{Type: "alloc_objects", Unit: "count"}, {Type: "alloc_space", Unit: "bytes"}}
	ev := testprof.Evidence(map[evidence.Kind]*profile.Profile{
		evidence.CPU: testprof.Build(
			testprof.Stack{Value: 300, Funcs: []string{"runtime.gcBgMarkWorker"}},
			testprof.Stack{Value: 500, Funcs: []string{"compress/flate.(*compressor).deflate", "main.handle"}},
			testprof.Stack{Value: 200, Funcs: []string{"main.other"}},
		),
		evidence.Allocs: allocs,
	})
	flate := evidence.FuncPrefix("compress/flate.")
	gc := evidence.FuncPrefix("runtime.gcBgMarkWorker")
	res := rules.Run(facts.New(ev), []*rules.Rule{
		{ID: "GC001", Class: "gc-pressure", Needs: []rules.Input{rules.CPU}, Facts: []facts.Key{facts.CPUStacks}, Check: func(p *rules.Pass) error {
			cpu := facts.Get(p.Facts, facts.CPUStacks)
			p.Report(rules.Finding{Severity: rules.High, Resource: "cpu", Impact: cpu.Share(gc),
				Claim: &rules.Claim{Level: rules.LevelRuntime, CPU: cpu.Has(gc), AllocDriven: true}})
			return nil
		}},
		{ID: "LIB004", Class: "compression-level", Needs: []rules.Input{rules.CPU}, Facts: []facts.Key{facts.CPUStacks, facts.AllocStacks}, Check: func(p *rules.Pass) error {
			cpu := facts.Get(p.Facts, facts.CPUStacks)
			p.Report(rules.Finding{Severity: rules.High, Resource: "cpu", Impact: cpu.Share(flate),
				Claim: &rules.Claim{Level: rules.LevelCode, CPU: cpu.Has(flate), Allocs: facts.Get(p.Facts, facts.AllocStacks).Has(flate)}})
			return nil
		}},
	})
	if got := ids(res.Findings); got != "LIB004,GC001" {
		t.Fatalf("rank = %s", got)
	}
	gcf := res.Findings[1]
	if gcf.CausedBy != "LIB004" || math.Abs(gcf.Impact-0.3) > 1e-9 {
		t.Errorf("GC finding: caused by %q, impact %.2f (its own samples stay its own)", gcf.CausedBy, gcf.Impact)
	}
	if c := res.Findings[0].Cost; c == nil || math.Abs(c.AllocsOwned-0.7) > 1e-9 {
		t.Errorf("allocation owned: %+v", c)
	}
}

// Links a rule sets itself (a wait behind a CPU hog) nest the same way, and
// a cycle of links loses no finding.
func TestExplicitLinksAndCycles(t *testing.T) {
	res := rules.Run(facts.New(cpuEvidence()), []*rules.Rule{
		finding("LAT", rules.Finding{Impact: 0.82, Severity: rules.High, Resource: "latency", CausedBy: "CPU"}),
		finding("CPU", rules.Finding{Impact: 0.30, Severity: rules.Low, Resource: "cpu"}),
		finding("X", rules.Finding{Impact: 0.5, Severity: rules.Medium, Resource: "cpu", CausedBy: "Y"}),
		finding("Y", rules.Finding{Impact: 0.5, Severity: rules.Medium, Resource: "cpu", CausedBy: "X"}),
	})
	if got := ids(res.Findings); got != "X,Y,CPU,LAT" {
		t.Errorf("rank = %s, want X,Y,CPU,LAT (the cycle broken at its best-ranked finding, LAT under CPU)", got)
	}
}

// Goroutines queued on a lock wait for what its holder does: when another
// finding's cost is in the function holding the lock (an fsync per request,
// casebook L1), the lock contention is that cost's symptom.
func TestWaitingBehindAHolderFollowsItsCost(t *testing.T) {
	lock := finding("LOCK001", rules.Finding{Severity: rules.High, Resource: "latency", Impact: 0.50,
		Locations: []rules.Location{{Function: "main.appendSync", Role: "lock holder"}},
		Claim:     &rules.Claim{Level: rules.LevelCode, HeldIn: []string{"main.appendSync"}}})
	sync := finding("DISK001", rules.Finding{Severity: rules.High, Resource: "latency", Impact: 0.47,
		Locations: []rules.Location{{Function: "main.appendSync", Role: "code syncing"}}})
	lock.Class, sync.Class = "lock-contention", "sync-disk-write"
	res := rules.Run(facts.New(cpuEvidence()), []*rules.Rule{lock, sync})
	if got := ids(res.Findings); got != "DISK001,LOCK001" || res.Findings[1].CausedBy != "DISK001" {
		t.Fatalf("rank = %s, links %+v", got, res.Findings)
	}
	// Slow work elsewhere does not explain the lock.
	other := finding("DISK001", rules.Finding{Severity: rules.High, Resource: "latency", Impact: 0.47,
		Locations: []rules.Location{{Function: "main.flushLater", Role: "code syncing"}}})
	other.Class = "sync-disk-write"
	res = rules.Run(facts.New(cpuEvidence()), []*rules.Rule{lock, other})
	if got := ids(res.Findings); got != "LOCK001,DISK001" || res.Findings[0].CausedBy != "" {
		t.Fatalf("unrelated cost linked: %s %+v", got, res.Findings)
	}
	// A logger's cost is in the function holding its mutex though its
	// location is the code calling it (CoreDNS's query log: goroutines
	// queue in log.(*Logger).output, LIB008's frames).
	logLock := finding("LOCK001", rules.Finding{Severity: rules.High, Resource: "latency", Impact: 0.23,
		Locations: []rules.Location{{Function: "log.(*Logger).output"}},
		Claim:     &rules.Claim{Level: rules.LevelCode, HeldIn: []string{"log.(*Logger).output"}}})
	logging := finding("LIB008", rules.Finding{Severity: rules.Medium, Resource: "cpu", Impact: 0.10,
		Locations: []rules.Location{{Function: "github.com/coredns/coredns/plugin/log.Logger.ServeDNS"}},
		Frames:    []string{"log.Print", "log.(*Logger).output"}})
	logLock.Class, logging.Class = "lock-contention", "logging-cost"
	res = rules.Run(facts.New(cpuEvidence()), []*rules.Rule{logLock, logging})
	if got := ids(res.Findings); got != "LIB008,LOCK001" || res.Findings[1].CausedBy != "LIB008" {
		t.Fatalf("waiting behind the logger's frames: rank = %s, links %+v", got, res.Findings)
	}
}

// A lock held deep under a cost's frames (logback's appender lock, taken in
// OutputStreamAppender.writeBytes far below the code calling the logger)
// is that cost's symptom when the CPU spent inside the holder is mostly
// the CPU the cost's finding claims, and stays its own finding when the
// holder's CPU is someone else's.
func TestWaitingBehindAHolderFollowsTheClaimedCPU(t *testing.T) {
	const holder = "ch.qos.logback.core.OutputStreamAppender.writeBytes"
	wait := finding("JVM010", rules.Finding{Severity: rules.High, Resource: "latency", Impact: 0.9,
		Locations: []rules.Location{{Function: holder}},
		Claim:     &rules.Claim{Level: rules.LevelCode, HeldIn: []string{holder}}})
	wait.Class = "jvm-lock-contention"
	logging := claiming("LIB008", rules.LevelCode, evidence.FuncPrefix("ch.qos.logback.classic."), rules.Medium)
	logging.Class = "logging-cost"
	run := func(stacks ...testprof.Stack) []rules.Finding {
		ev := testprof.Evidence(map[evidence.Kind]*profile.Profile{evidence.CPU: testprof.Build(stacks...)})
		return rules.Run(facts.New(ev), []*rules.Rule{wait, logging}).Findings
	}
	fs := run(
		testprof.Stack{Value: 30, Funcs: []string{"java.io.FileOutputStream.writeBytes", holder, "ch.qos.logback.classic.Logger.info", "app.Filter.doFilter"}},
		testprof.Stack{Value: 10, Funcs: []string{"ch.qos.logback.classic.pattern.LineOfCallerConverter.convert", "ch.qos.logback.classic.Logger.info", "app.Filter.doFilter"}},
		testprof.Stack{Value: 60, Funcs: []string{"app.Controller.get"}},
	)
	if got := ids(fs); got != "LIB008,JVM010" || fs[1].CausedBy != "LIB008" || !strings.Contains(fs[1].CauseReason, "OutputStreamAppender.writeBytes") {
		t.Fatalf("holder's CPU claimed by the logging: rank = %s, links %+v", got, fs)
	}
	// The same lock, its holder's CPU outside what the logging claims
	// (three quarters of it under a caller that is not the logger).
	fs = run(
		testprof.Stack{Value: 10, Funcs: []string{"java.io.FileOutputStream.writeBytes", holder, "ch.qos.logback.classic.Logger.info", "app.Filter.doFilter"}},
		testprof.Stack{Value: 30, Funcs: []string{"java.io.FileOutputStream.writeBytes", holder, "app.Exporter.run"}},
		testprof.Stack{Value: 60, Funcs: []string{"app.Controller.get"}},
	)
	for _, f := range fs {
		if f.CausedBy != "" {
			t.Errorf("%s linked to %s though the holder's CPU is mostly not its cost", f.ID, f.CausedBy)
		}
	}
}

// A cost that grows until something fails (a goroutine leak) ranks before a
// steady one at the same severity, whatever the resources (casebook G1).
func TestGrowingCostRanksFirst(t *testing.T) {
	res := rules.Run(facts.New(cpuEvidence()), []*rules.Rule{
		finding("SCHED002", rules.Finding{Impact: 0.20, Severity: rules.High, Resource: "cpu"}),
		finding("MEM003", rules.Finding{Impact: 1.0, Severity: rules.High, Resource: "memory", Growing: true}),
		finding("NET002", rules.Finding{Impact: 0.9, Severity: rules.Medium, Resource: "latency", Growing: true}),
	})
	if got := ids(res.Findings); got != "MEM003,SCHED002,NET002" {
		t.Errorf("rank = %s, want MEM003,SCHED002,NET002 (growth first within a severity, never across)", got)
	}
}
