package rules

import (
	"fmt"
	"sort"
	"strings"

	"github.com/perfdoctor/perfdoctor/internal/human"

	"github.com/perfdoctor/perfdoctor/evidence"
)

// Level orders explanations of one cost from the most general to the most
// specific. When two findings explain the same CPU sample or the same
// allocated byte, the more specific one owns it: a named library or call
// site over a runtime mechanism, a runtime mechanism over a kernel
// mechanism. The most specific explanation is the one a user can act on:
// kernel time under net.Dial is fixed by reusing connections. A setting
// that makes a mechanism costly comes first of all: scheduler time under
// GOMAXPROCS=64 on 2 CPUs is fixed by setting GOMAXPROCS, without touching
// the code whose goroutines the scheduler then runs.
type Level int

const (
	LevelKernel  Level = iota + 1 // the kernel's work: network stack, system calls
	LevelRuntime                  // a runtime mechanism: GC, the scheduler, goroutine lifecycle
	LevelCode                     // a named library or call site in the service
	LevelConfig                   // a setting that makes a runtime mechanism costly (GOMAXPROCS above the CPUs)
)

var levelNames = [...]string{LevelKernel: "kernel", LevelRuntime: "runtime", LevelCode: "code", LevelConfig: "config"}

func (l Level) String() string {
	if l < LevelKernel || l > LevelConfig {
		return fmt.Sprintf("level(%d)", int(l))
	}
	return levelNames[l]
}

func (l Level) MarshalText() ([]byte, error) { return []byte(l.String()), nil }

func (l *Level) UnmarshalText(b []byte) error {
	for i, n := range levelNames {
		if n != "" && string(b) == n {
			*l = Level(i)
			return nil
		}
	}
	return fmt.Errorf("unknown level %q", b)
}

// Claim declares the cost a finding's impact was computed from, so the
// engine can give every CPU sample and every allocated byte to one finding
// only. A rule that estimates a CPU share from samples says which samples;
// the engine then scales the finding's impact by the fraction of them it
// owns, so the CPU impacts of one diagnosis never add up to more than the
// CPU there is.
type Claim struct {
	Level Level
	// CPU selects the samples of Evidence.CPUStacks() the finding explains.
	CPU func(evidence.Sample) bool
	// Allocs selects the samples of Evidence.AllocStacks() the finding
	// explains (allocated bytes in the window).
	Allocs func(evidence.Sample) bool
	// Grade, when set, grades the finding again from its impact once
	// more specific findings took their part of its cost (with the rule's
	// own thresholds); the engine only ever lowers a severity this way.
	Grade func(impact float64) Severity
	// Regrade, when set, grades the finding again from the engine's final
	// estimate of what its fix removes (with what the work drags and what
	// its frames cannot show: dragOverhead), upward only, so severity
	// follows the estimate the finding ranks by. A rule whose grade is
	// capped for a reason other than size leaves it unset.
	Regrade func(estimate float64) Severity
	// HeldIn names the functions that hold what the finding's waiting is
	// behind (a contended lock's holders), the one holding the lock waited
	// for most first: when another finding's cost is in one of them (an
	// fsync, a downstream call, a hot loop inside the critical section),
	// the waiting is that cost's symptom.
	HeldIn []string
	// AllocDriven marks a cost that follows the allocation rate (GC work):
	// when one finding owns most of the bytes allocated in the window, that
	// finding is this one's cause.
	AllocDriven bool
}

// Cost is what the engine measured of a finding's claim, as shares of the
// CPU profile and of the bytes allocated in the window.
type Cost struct {
	Level       Level   `json:"level"`
	CPUClaimed  float64 `json:"cpu_claimed,omitempty"`  // share of CPU samples the finding's claim selects
	CPUOwned    float64 `json:"cpu_owned,omitempty"`    // of those, the share no more specific finding explains
	AllocsOwned float64 `json:"allocs_owned,omitempty"` // share of allocated bytes the finding owns
}

// causeShare is the part of a finding's claimed cost a more specific
// finding must own for the first to be called its symptom; allocShare is
// the part of the window's allocated bytes an allocation site must own to
// be called the cause of allocation-driven (GC) cost.
const (
	causeShare = 0.5
	allocShare = 0.5
)

// attribute arbitrates the findings' claims: each CPU sample and each
// allocated byte goes to the most specific finding that claims it, impacts
// shrink to the cost each finding owns, and a finding that lost most of its
// cost to a more specific one is linked to it as a symptom of its cause.
func attribute(cpuStacks, allocStacks *evidence.Stacks, fs []Finding) {
	cpu := arbitrate(cpuStacks, fs, func(c *Claim) func(evidence.Sample) bool { return c.CPU })
	allocs := arbitrate(allocStacks, fs, func(c *Claim) func(evidence.Sample) bool { return c.Allocs })
	for i := range fs {
		f := &fs[i]
		if f.Claim == nil {
			continue
		}
		f.Cost = &Cost{Level: f.Claim.Level}
		if c, ok := cpu.claimed[i]; ok && c > 0 {
			owned := cpu.owned[i]
			f.Cost.CPUClaimed, f.Cost.CPUOwned = cpu.share(c), cpu.share(owned)
			if owned < c && f.Resource == "cpu" {
				f.scaleImpact(float64(owned) / float64(c))
				if f.Claim.Grade != nil {
					f.Severity = min(f.Severity, f.Claim.Grade(f.Impact))
				}
				f.ImpactBasis += fmt.Sprintf("; scaled to the %s of its %s of CPU that no more specific finding explains",
					human.Percent(float64(owned)/float64(c)), human.Percent(cpu.share(c)))
			}
			if j, taken := cpu.topTaker(i); j >= 0 && fs[j].Claim.Level > f.Claim.Level && float64(taken) >= causeShare*float64(c) {
				link(fs, i, j, fmt.Sprintf("%s of the CPU it describes is explained by %s (%s)",
					human.Percent(float64(taken)/float64(c)), fs[j].ID, fs[j].Class))
			}
		}
		if c := allocs.owned[i]; c > 0 {
			f.Cost.AllocsOwned = allocs.share(c)
		}
	}
	// Allocation-driven costs (GC) follow the site that allocates most.
	for i := range fs {
		f := &fs[i]
		if f.Claim == nil || !f.Claim.AllocDriven || f.CausedBy != "" {
			continue
		}
		best := -1
		for j, c := range allocs.owned {
			if j != i && allocs.share(c) >= allocShare && (best < 0 || c > allocs.owned[best]) {
				best = j
			}
		}
		if best >= 0 {
			link(fs, i, best, fmt.Sprintf("%s allocates %s of the bytes allocated in the window, and GC work follows allocation",
				fs[best].ID, human.Percent(allocs.share(allocs.owned[best]))))
		}
	}
	capCPU(fs)
}

// linkHeldWaits makes waiting behind a holder a symptom of what the holder
// does. It runs once the engine has graded the CPU findings on their
// estimates (dragOverhead): a holder's finding is judged by what its fix
// is estimated to remove, as it ranks.
func linkHeldWaits(cpu *evidence.Stacks, fs []Finding) {
	for i := range fs {
		f := &fs[i]
		if f.Claim == nil || len(f.Claim.HeldIn) == 0 || f.CausedBy != "" {
			continue
		}
		if j, fn := heldCost(cpu, fs, i); j >= 0 {
			link(fs, i, j, fmt.Sprintf("the waiting is behind %s, which %s (%s) names as where its cost is", ShortFunc(fn), fs[j].ID, fs[j].Class))
		}
	}
}

// heldCost finds the most severe other finding whose cost is in a function
// the waiting of fs[i] is held by: one of its locations, one of the frames
// it is about (a logger's cost is in log.(*Logger).output, where the
// logger's mutex is taken, though its location is the code calling it), or
// the CPU its claim selects: when at least causeShare of the CPU spent
// inside the function holding the lock waited for most is the finding's,
// the work done under that lock is its work, whichever frames it lists
// (logback's appender lock is held in OutputStreamAppender.writeBytes,
// deep under a logging finding that names the code calling the logger).
// Only that first holder is weighed by CPU: a minor lock's holder can be a
// thread's root (Tomcat's SocketProcessorBase.run), with every sample
// inside it.
func heldCost(cpu *evidence.Stacks, fs []Finding, i int) (int, string) {
	held := map[string]bool{}
	for _, fn := range fs[i].Claim.HeldIn {
		held[fn] = true
	}
	main := heldSamples(cpu, fs[i].Claim.HeldIn[0])
	best, where := -1, ""
	for j, g := range fs {
		if j == i || g.Class == fs[i].Class || g.Severity < Medium {
			continue
		}
		consider := func(fn string) {
			if held[fn] && (best < 0 || g.Severity > fs[best].Severity || g.Severity == fs[best].Severity && g.Impact > fs[best].Impact) {
				best, where = j, fn
			}
		}
		for _, fn := range g.Frames {
			consider(fn)
		}
		for _, l := range g.Locations {
			consider(l.Function)
		}
		if g.Claim != nil && g.Claim.CPU != nil && main.claimedBy(g.Claim.CPU) {
			consider(fs[i].Claim.HeldIn[0])
		}
	}
	return best, where
}

// heldWork is the CPU spent inside a function that holds a lock: the
// samples with it on their stacks.
type heldWork struct {
	samples []evidence.Sample
	total   int64
}

func heldSamples(cpu *evidence.Stacks, fn string) heldWork {
	var w heldWork
	if cpu == nil {
		return w
	}
	in := cpu.Has(func(f string) bool { return f == fn })
	for _, s := range cpu.Samples {
		if in(s) {
			w.samples = append(w.samples, s)
			w.total += s.Value
		}
	}
	return w
}

// claimedBy tells whether a claim selects at least causeShare of the work
// done inside the holder.
func (w heldWork) claimedBy(claim func(evidence.Sample) bool) bool {
	var claimed int64
	for _, s := range w.samples {
		if claim(s) {
			claimed += s.Value
		}
	}
	return w.total > 0 && float64(claimed) >= causeShare*float64(w.total)
}

// arbitration is the outcome of one profile's claims: per finding index,
// the value it claimed, the value it owns, and what others took from it.
type arbitration struct {
	total   int64
	claimed map[int]int64
	owned   map[int]int64
	taken   map[int]map[int]int64 // taken[i][j]: claimed by i, owned by j
}

func (a arbitration) share(v int64) float64 {
	if a.total <= 0 {
		return 0
	}
	return float64(v) / float64(a.total)
}

// topTaker is the finding that took the most of i's claim, and how much.
func (a arbitration) topTaker(i int) (int, int64) {
	best, most := -1, int64(0)
	for j, v := range a.taken[i] {
		if v > most || (v == most && best >= 0 && j < best) {
			best, most = j, v
		}
	}
	return best, most
}

func arbitrate(st *evidence.Stacks, fs []Finding, sel func(*Claim) func(evidence.Sample) bool) arbitration {
	a := arbitration{claimed: map[int]int64{}, owned: map[int]int64{}, taken: map[int]map[int]int64{}}
	if st == nil {
		return a
	}
	a.total = st.Total
	var claimants []int
	for i := range fs {
		if fs[i].Claim != nil && sel(fs[i].Claim) != nil {
			claimants = append(claimants, i)
		}
	}
	if len(claimants) == 0 {
		return a
	}
	hits := make([][]bool, len(claimants))
	for k, i := range claimants {
		keep := sel(fs[i].Claim)
		hits[k] = make([]bool, len(st.Samples))
		for n, s := range st.Samples {
			if keep(s) {
				hits[k][n] = true
				a.claimed[i] += s.Value
			}
		}
	}
	// The most specific claim wins; at one level the narrower claim (the
	// smaller total), then the lower rule ID, so the outcome is stable.
	better := func(i, j int) bool {
		li, lj := fs[i].Claim.Level, fs[j].Claim.Level
		if li != lj {
			return li > lj
		}
		if a.claimed[i] != a.claimed[j] {
			return a.claimed[i] < a.claimed[j]
		}
		return fs[i].ID < fs[j].ID
	}
	for n, s := range st.Samples {
		owner := -1
		for k, i := range claimants {
			if hits[k][n] && (owner < 0 || better(i, owner)) {
				owner = i
			}
		}
		if owner < 0 {
			continue
		}
		a.owned[owner] += s.Value
		for k, i := range claimants {
			if hits[k][n] && i != owner {
				if a.taken[i] == nil {
					a.taken[i] = map[int]int64{}
				}
				a.taken[i][owner] += s.Value
			}
		}
	}
	return a
}

// link records that fs[symptom] is a consequence of fs[cause], unless that
// would make a cycle.
func link(fs []Finding, symptom, cause int, why string) {
	if symptom == cause || fs[symptom].CausedBy != "" {
		return
	}
	for id := fs[cause].ID; id != ""; {
		if id == fs[symptom].ID {
			return
		}
		next := ""
		for _, f := range fs {
			if f.ID == id {
				next = f.CausedBy
				break
			}
		}
		id = next
	}
	fs[symptom].CausedBy = fs[cause].ID
	fs[symptom].CauseReason = why
}

// capCPU keeps the CPU impacts of one diagnosis within the CPU there is.
// Claimed findings are already disjoint; findings estimated from other
// evidence (/proc times, a JVM's counters) may still overlap them, so when
// the sum exceeds 1 those are scaled down first, and everything only if the
// claimed ones alone exceed it. A claimed finding whose impact is well above
// the samples it owns was estimated from other evidence too (NET003's
// kernel share from /proc: 18% of CPU against 0.8% of the samples owned),
// and scales with those: otherwise it would shrink the finding that owns
// the samples (PostgreSQL's scan, 96% owned, was cut to 82%).
func capCPU(fs []Finding) {
	fromOther := estimatedElsewhere
	var claimed, other float64
	for _, f := range fs {
		switch {
		case f.Resource != "cpu":
		case !fromOther(f):
			claimed += f.Impact
		default:
			other += f.Impact
		}
	}
	if claimed+other <= 1 {
		return
	}
	scaleClaimed, scaleOther := 1.0, 0.0
	if claimed < 1 {
		scaleOther = (1 - claimed) / other
	} else {
		scaleClaimed = 1 / claimed
	}
	for i := range fs {
		f := &fs[i]
		if f.Resource != "cpu" || f.Impact == 0 {
			continue
		}
		scale := scaleOther
		if !fromOther(*f) {
			scale = scaleClaimed
		}
		if scale < 1 {
			f.scaleImpact(scale)
			f.ImpactBasis += "; scaled down so the diagnosis's CPU shares add up to at most 100%"
		}
	}
}

// estimatedElsewhere reports a CPU finding whose impact was not read from
// the samples it owns: it claims none, or its impact is well above them
// (more than twice, plus a point: NET003's kernel share from /proc).
func estimatedElsewhere(f Finding) bool {
	return f.Cost == nil || f.Cost.CPUClaimed <= 0 || f.Impact > 2*f.Cost.CPUOwned+0.01
}

// fillExplains writes each link's other direction: the cause lists its
// symptoms.
func fillExplains(fs []Finding) {
	at := map[string]int{}
	for i := range fs {
		fs[i].Explains = nil
		at[fs[i].ID] = i
	}
	for _, f := range fs {
		if j, ok := at[f.CausedBy]; ok && f.CausedBy != "" {
			fs[j].Explains = append(fs[j].Explains, f.ID)
		}
	}
	for i := range fs {
		sort.Strings(fs[i].Explains)
	}
}

// resourceOrder places findings of one severity: CPU capacity first (it is
// what a fix measurably gives back), then latency, then memory; but in a
// process whose waits, not its CPUs, set its throughput (waitBound: it used
// under half of the CPU it may use, the significance rule's line), latency
// first, since a fix of what it waits for gives throughput and a CPU fix
// gives back cores it does not lack. PHP-FPM with 2 children on 0.064 of
// 2 cores: a connection per request held 79% of its CPU (0.05 cores), and
// the children's queue 94% of request time, 15.7x when sized. Impacts are
// only compared within one resource: a fraction of memory or of request
// time is not a share of CPU.
func resourceOrder(r string, waitBound bool) int {
	switch strings.ToLower(r) {
	case "cpu", "":
		if waitBound {
			return 1
		}
		return 0
	case "latency":
		if waitBound {
			return 0
		}
		return 1
	case "memory":
		return 2
	}
	return 3
}

// scaleImpact scales a finding's impact and its stated range alike: what
// the engine gives to other findings leaves both the point and the range.
func (f *Finding) scaleImpact(k float64) {
	f.Impact *= k
	if r := f.ImpactRange; r != nil {
		f.ImpactRange = &[2]float64{r[0] * k, r[1] * k}
	}
}
