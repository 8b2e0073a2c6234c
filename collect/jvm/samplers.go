package jvm

import (
	"bufio"
	"context"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/perfdoctor/perfdoctor/bundle"
	"github.com/perfdoctor/perfdoctor/formats/jfr"
)

// cpuTimeEvent is JFR's CPU-time sampler (JEP 509, JDK 25 and later on
// Linux): a sample each time a thread has used an interval of CPU time,
// taken by a signal, so threads inside the VM or native code are sampled
// too, where jdk.ExecutionSample sees only threads running Java code.
const cpuTimeEvent = "jdk.CPUTimeSample"

// cpuTimeItem is the manifest item saying whether the CPU-time sampler ran.
const cpuTimeItem = "cpu-time-sampler"

// executionInterval is JFR's execution sampling period in the settings
// (profile.jfc: 10 ms, default.jfc: 20 ms); the CPU-time sampler is given
// the same interval of CPU time.
func executionInterval(settings string) time.Duration {
	if settings == "default" {
		return 20 * time.Millisecond
	}
	return 10 * time.Millisecond
}

// instant formats t as JFR.dump's begin and end read it.
func instant(t time.Time) string {
	return t.UTC().Format("2006-01-02T15:04:05.000000000Z")
}

// samplers says which CPU samplers ran, for the manifest, and records
// whether the CPU-time sampler did as an item.
func (c *collection) samplers(ctx context.Context, rec *jfr.Recording, ap *profiler, apErr error, recording string, dumped bool) []bundle.Sampler {
	var out []bundle.Sampler
	interval := executionInterval(c.opt.Settings)
	switch {
	case ap != nil && apErr == nil && rec != nil:
		out = append(out, bundle.Sampler{Name: rec.JVM.Profiler + " (" + ap.event + ")", Interval: bundle.Duration(ap.interval), Samples: int64(rec.JVM.ExecutionSamples)})
	case ap == nil:
		s := bundle.Sampler{Name: "jdk.ExecutionSample", Interval: bundle.Duration(interval)}
		if rec != nil {
			s.Samples = int64(rec.JVM.ExecutionSamples)
		}
		out = append(out, s)
	}
	if !c.cpuTime {
		c.w.Skip(cpuTimeItem, "this JVM offers no "+cpuTimeEvent+" (JEP 509: JDK 25 and later)")
		return out
	}
	s := bundle.Sampler{Name: cpuTimeEvent, Interval: bundle.Duration(interval)}
	if dumped {
		s.Samples = c.countEvents(ctx, recording)[cpuTimeEvent]
	}
	c.w.Record(bundle.Item{Name: cpuTimeItem, Status: bundle.StatusOK})
	return append(out, s)
}

// countEvents counts the events of each type in a recording with `jfr
// summary` (the JDK's own count; formats/jfr decodes only what it
// converts). It returns nil when the tool fails.
func (c *collection) countEvents(ctx context.Context, recording string) map[string]int64 {
	cctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	out, err := exec.CommandContext(cctx, c.jfrTool, "summary", recording).Output()
	if err != nil {
		c.opt.Logger.Warn("jfr summary", "err", err)
		return nil
	}
	return parseSummaryCounts(string(out))
}

// parseSummaryCounts reads the event table of `jfr summary`:
// " jdk.CPUTimeSample    154    2310".
func parseSummaryCounts(out string) map[string]int64 {
	counts := map[string]int64{}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 3 || !strings.Contains(f[0], ".") {
			continue
		}
		if n, err := strconv.ParseInt(f[1], 10, 64); err == nil {
			counts[f[0]] += n
		}
	}
	return counts
}
