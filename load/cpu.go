package load

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// processCPU is the user+system CPU time this process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// LoadAverage is the 1-minute load average, or -1 when unknown.
func LoadAverage() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return -1
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return -1
	}
	v, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return -1
	}
	return v
}

// generatorWarnings says when the generator may have measured itself rather
// than the target: it used nearly all the CPUs it may use, its timers fired
// late (open loop: sends slip because the generator is not scheduled), or
// the machine is oversubscribed.
func generatorWarnings(cpuPerSec float64, procs int, wakeLag *hdrhistogram.Histogram, loadAvg float64) []string {
	var w []string
	if cpuPerSec >= 0.9*float64(procs) {
		w = append(w, fmt.Sprintf("the generator used %.2f of %d CPUs: it was probably the bottleneck; give it more cores or lower the load", cpuPerSec, procs))
	}
	if wakeLag.TotalCount() >= 100 {
		if p99 := usDur(wakeLag.ValueAtQuantile(99)); p99 > 2*LateThreshold {
			w = append(w, fmt.Sprintf("the generator woke up to %s late for 1%% of its sends: it is short of CPU, so the load it offered was burstier than the schedule", fmtDur(p99)))
		}
	}
	if cpus := runtime.NumCPU(); loadAvg > float64(cpus)*1.5 {
		w = append(w, "the machine is oversubscribed (load average above 1.5 per CPU): the figures are noisy")
	}
	return w
}
