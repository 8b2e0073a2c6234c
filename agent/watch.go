package agent

import (
	"fmt"
	"slices"
	"time"
)

// Sample is one raw observation of the process. Counters are cumulative;
// the watcher turns two consecutive samples into a Reading.
type Sample struct {
	Time            time.Time
	CPUSeconds      float64 // process user+system CPU time
	Goroutines      float64
	RSSBytes        float64
	GCCPUSeconds    float64 // /cpu/classes/gc/total:cpu-seconds
	TotalCPUSeconds float64 // /cpu/classes/total:cpu-seconds (GOMAXPROCS × wall time)
}

// Reading is what one watch interval showed.
type Reading struct {
	Time       time.Time `json:"time"`
	CPUCores   float64   `json:"cpu_cores"`  // process CPU time per second
	Goroutines float64   `json:"goroutines"` // at the end of the interval
	RSSBytes   float64   `json:"rss_bytes"`  // at the end of the interval
	GCShare    float64   `json:"gc_share"`   // GC CPU over the runtime's available CPU
}

// Signal names, as recorded in a Trigger.
const (
	SignalCPU        = "cpu"
	SignalGoroutines = "goroutines"
	SignalRSS        = "rss"
	SignalGCShare    = "gc_share"
)

// Threshold arms one signal. A zero Threshold is disarmed.
type Threshold struct {
	// Above fires when the reading reaches this absolute value (0 = off).
	Above float64 `json:"above,omitempty"`
	// Factor fires when the reading reaches Factor × the rolling baseline
	// (the median of the last Triggers.Baseline readings) and is at least
	// Min, so a tiny baseline does not make noise look like a jump (0 = off).
	Factor float64 `json:"factor,omitempty"`
	Min    float64 `json:"min,omitempty"`
}

// Triggers arms anomaly capture.
type Triggers struct {
	CPU        Threshold `json:"cpu"`        // cores
	Goroutines Threshold `json:"goroutines"` // count
	RSS        Threshold `json:"rss"`        // bytes
	GCShare    Threshold `json:"gc_share"`   // fraction 0..1
	// Baseline is how many readings the rolling baseline holds; relative
	// thresholds wait until it is full. Default 12.
	Baseline int `json:"baseline"`
	// Cooldown is the least time between two captures. Default 10 minutes.
	Cooldown time.Duration `json:"cooldown"`
}

// DefaultTriggers are used when Options.Triggers is nil. memLimit (bytes,
// 0 = none) arms an absolute RSS threshold at 90% of it.
func DefaultTriggers(memLimit uint64) Triggers {
	return Triggers{
		CPU:        Threshold{Factor: 3, Min: 0.5},
		Goroutines: Threshold{Above: 100_000, Factor: 3, Min: 1_000},
		RSS:        Threshold{Above: 0.9 * float64(memLimit), Factor: 2, Min: 64 << 20},
		GCShare:    Threshold{Above: 0.25, Factor: 3, Min: 0.10},
		Baseline:   12,
		Cooldown:   10 * time.Minute,
	}
}

// Trigger records why a capture was taken.
type Trigger struct {
	Time     time.Time `json:"time"`
	Signal   string    `json:"signal"`
	Value    float64   `json:"value"`
	Baseline float64   `json:"baseline,omitempty"` // median of the rolling window; 0 before it fills
	Rule     string    `json:"rule"`               // e.g. "value 0.31 >= above 0.25"
	Reading  Reading   `json:"reading"`            // every signal at that moment
	Also     []string  `json:"also,omitempty"`     // other signals that fired at the same tick
}

// watcher turns samples into readings and decides when to capture. It is
// not safe for concurrent use; the agent calls it from one goroutine.
type watcher struct {
	t         Triggers
	prev      *Sample
	hist      [4][]float64 // rolling windows, in signals order
	lastFire  time.Time
	last      Reading
	lastFired *Trigger
	scratch   []float64
}

func newWatcher(t Triggers) *watcher {
	if t.Baseline <= 0 {
		t.Baseline = 12
	}
	return &watcher{t: t}
}

// observe feeds one sample. It returns the reading (ok false for the first
// sample, which only sets the origin) and a Trigger when one should fire.
func (w *watcher) observe(s Sample) (r Reading, ok bool, fire *Trigger) {
	prev := w.prev
	w.prev = &s
	if prev == nil {
		return Reading{}, false, nil
	}
	dt := s.Time.Sub(prev.Time).Seconds()
	if dt <= 0 {
		return Reading{}, false, nil
	}
	r = Reading{Time: s.Time, Goroutines: s.Goroutines, RSSBytes: s.RSSBytes}
	r.CPUCores = max(0, s.CPUSeconds-prev.CPUSeconds) / dt
	if dTotal := s.TotalCPUSeconds - prev.TotalCPUSeconds; dTotal > 0 {
		r.GCShare = max(0, s.GCCPUSeconds-prev.GCCPUSeconds) / dTotal
	}
	w.last = r
	values := [4]float64{r.CPUCores, r.Goroutines, r.RSSBytes, r.GCShare}
	names := [4]string{SignalCPU, SignalGoroutines, SignalRSS, SignalGCShare}
	ths := [4]Threshold{w.t.CPU, w.t.Goroutines, w.t.RSS, w.t.GCShare}
	for i, v := range values {
		base, warm := w.median(w.hist[i]), len(w.hist[i]) >= w.t.Baseline
		rule := ""
		switch th := ths[i]; {
		case th.Above > 0 && v >= th.Above:
			rule = fmt.Sprintf("value %.4g >= above %.4g", v, th.Above)
		case th.Factor > 0 && warm && v >= th.Factor*base && v >= th.Min:
			rule = fmt.Sprintf("value %.4g >= %.3g × baseline %.4g (and >= min %.4g)", v, th.Factor, base, th.Min)
		}
		if rule != "" {
			if fire == nil {
				fire = &Trigger{Time: s.Time, Signal: names[i], Value: v, Rule: rule, Reading: r}
				if warm {
					fire.Baseline = base
				}
			} else {
				fire.Also = append(fire.Also, names[i])
			}
		}
		// The reading joins the baseline after it was judged, so a lasting
		// change becomes the new normal.
		if len(w.hist[i]) >= w.t.Baseline {
			copy(w.hist[i], w.hist[i][1:]) // shift in place: no allocation once full
			w.hist[i][len(w.hist[i])-1] = v
		} else {
			w.hist[i] = append(w.hist[i], v)
		}
	}
	if fire != nil && !w.lastFire.IsZero() && s.Time.Sub(w.lastFire) < w.t.Cooldown {
		return r, true, nil // cooling down
	}
	if fire != nil {
		w.lastFire = s.Time
		w.lastFired = fire
	}
	return r, true, fire
}

// baselines returns the current medians, in Reading form.
func (w *watcher) baselines() Reading {
	return Reading{
		CPUCores:   w.median(w.hist[0]),
		Goroutines: w.median(w.hist[1]),
		RSSBytes:   w.median(w.hist[2]),
		GCShare:    w.median(w.hist[3]),
	}
}

// median sorts a copy of xs in the watcher's scratch space.
func (w *watcher) median(xs []float64) float64 {
	w.scratch = append(w.scratch[:0], xs...)
	return median(w.scratch)
}

// median sorts xs in place.
func median(s []float64) float64 {
	if len(s) == 0 {
		return 0
	}
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
