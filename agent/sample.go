package agent

import (
	"os"
	"runtime/metrics"
	"sync"
	"time"
)

// readMetric reads one scalar runtime metric as a float64 (0 if unknown).
func readMetric(name string) float64 {
	s := []metrics.Sample{{Name: name}}
	metrics.Read(s)
	switch s[0].Value.Kind() {
	case metrics.KindUint64:
		return float64(s[0].Value.Uint64())
	case metrics.KindFloat64:
		return s[0].Value.Float64()
	}
	return 0
}

// sampler reads a Sample with as little work as possible: one
// metrics.Read of five metrics into a reused slice, one getrusage, and one
// read of /proc/self/statm.
type sampler struct {
	mu       sync.Mutex
	samples  []metrics.Sample
	statm    string
	pageSize int
	buf      [128]byte // /proc/self/statm is one short line
}

func newSampler() *sampler {
	return &sampler{
		samples:  []metrics.Sample{{Name: mGCCPU}, {Name: mTotalCPU}, {Name: mGoroutines}, {Name: mMemTotal}, {Name: mMemFree}},
		statm:    "/proc/self/statm",
		pageSize: os.Getpagesize(),
	}
}

func (s *sampler) sample() Sample {
	s.mu.Lock()
	defer s.mu.Unlock()
	metrics.Read(s.samples)
	f := func(i int) float64 {
		switch v := s.samples[i].Value; v.Kind() {
		case metrics.KindUint64:
			return float64(v.Uint64())
		case metrics.KindFloat64:
			return v.Float64()
		}
		return 0
	}
	user, sys, _ := processCPU()
	out := Sample{
		Time:            time.Now(),
		CPUSeconds:      user + sys,
		GCCPUSeconds:    f(0),
		TotalCPUSeconds: f(1),
		Goroutines:      f(2),
	}
	if rss, ok := s.statmRSS(); ok {
		out.RSSBytes = float64(rss)
	} else {
		out.RSSBytes = f(3) - f(4) // the runtime's mapped memory, not released
	}
	return out
}

// rss is the current resident set size in bytes.
func (s *sampler) rss() uint64 {
	s.mu.Lock()
	v, ok := s.statmRSS()
	s.mu.Unlock()
	if ok {
		return v
	}
	return uint64(readMetric(mMemTotal) - readMetric(mMemFree))
}

// statmRSS reads the second field of /proc/self/statm (resident pages)
// without allocating. Callers hold s.mu.
func (s *sampler) statmRSS() (uint64, bool) {
	f, err := os.Open(s.statm)
	if err != nil {
		return 0, false
	}
	n, _ := f.Read(s.buf[:])
	f.Close()
	field, v, digits := 0, uint64(0), 0
	for _, c := range s.buf[:n] {
		switch {
		case c == ' ' || c == '\n':
			if digits > 0 && field == 1 {
				return v * uint64(s.pageSize), true
			}
			if digits > 0 {
				field++
			}
			digits, v = 0, 0
		case c >= '0' && c <= '9':
			v = v*10 + uint64(c-'0')
			digits++
		default:
			return 0, false
		}
	}
	return 0, false
}
