package bundle

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// RuntimeStats is one sample of the target's memory and GC statistics. Two
// samples (start and end of the window) give rates: GC cycles per second,
// allocation rate, GC CPU share.
type RuntimeStats struct {
	Time   time.Time `json:"time"`
	Source string    `json:"source"` // e.g. "heap?debug=1"

	HeapAlloc     uint64  `json:"heap_alloc"`
	HeapInuse     uint64  `json:"heap_inuse"`
	HeapObjects   uint64  `json:"heap_objects"`
	HeapSys       uint64  `json:"heap_sys"`
	Sys           uint64  `json:"sys"`
	TotalAlloc    uint64  `json:"total_alloc"`
	Mallocs       uint64  `json:"mallocs"`
	Frees         uint64  `json:"frees"`
	NextGC        uint64  `json:"next_gc"`
	LastGC        uint64  `json:"last_gc"` // ns since the Unix epoch
	NumGC         uint64  `json:"num_gc"`
	NumForcedGC   uint64  `json:"num_forced_gc"`
	GCCPUFraction float64 `json:"gc_cpu_fraction"` // since process start
	MaxRSS        uint64  `json:"max_rss,omitempty"`
	// Runtime is the full runtime/metrics snapshot when the target serves
	// one (the agent package); nil otherwise.
	Runtime *RuntimeMetrics `json:"runtime_metrics,omitempty"`
	// Pauses are the most recent stop-the-world pauses (the runtime keeps 256),
	// oldest first; pauses inside a window are those whose End falls in it.
	Pauses []Pause `json:"pauses,omitempty"`
}

// Pause is one GC stop-the-world pause.
type Pause struct {
	End uint64 `json:"end"` // ns since the Unix epoch
	Ns  uint64 `json:"ns"`
}

// PausesSince returns the pauses of the cycles after the start sample's
// (its NumGC) up to this sample's, oldest first, at most the history's
// 256. It selects by cycle number, not by clock: under load a sample's
// time is taken after the target read its statistics, and cycles that
// ended in between would otherwise fall out of both ends. A pause that
// ended before the start sample's last GC is not the window's.
func (s *RuntimeStats) PausesSince(start *RuntimeStats) []Pause {
	if s.NumGC <= start.NumGC {
		return nil
	}
	n := min(s.NumGC-start.NumGC, uint64(len(s.Pauses)))
	out := s.Pauses[len(s.Pauses)-int(n):]
	for len(out) > 0 && out[0].End <= start.LastGC {
		out = out[1:]
	}
	return out
}

// ErrNoMemStats is returned by ParseMemStats when the text has no
// runtime.MemStats section (e.g. a heap profile written without debug=1).
var ErrNoMemStats = errors.New("no runtime.MemStats section")

// ParseMemStats reads the "# runtime.MemStats" trailer that net/http/pprof
// appends to /debug/pprof/heap?debug=1. It is the one source of GC statistics
// that every Go service exposing pprof serves.
func ParseMemStats(r io.Reader) (RuntimeStats, error) {
	var st RuntimeStats
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 4*1024*1024) // PauseNs lines are long
	inStats := false
	seen := 0
	var pauseNs, pauseEnd []uint64
	for sc.Scan() {
		line := sc.Text()
		if !inStats {
			if strings.HasPrefix(line, "# runtime.MemStats") {
				inStats = true
			}
			continue
		}
		name, value, ok := strings.Cut(strings.TrimPrefix(line, "# "), " = ")
		if !ok {
			continue
		}
		var dst *uint64
		switch name {
		case "HeapAlloc":
			dst = &st.HeapAlloc
		case "HeapInuse":
			dst = &st.HeapInuse
		case "HeapObjects":
			dst = &st.HeapObjects
		case "HeapSys":
			dst = &st.HeapSys
		case "Sys":
			dst = &st.Sys
		case "TotalAlloc":
			dst = &st.TotalAlloc
		case "Mallocs":
			dst = &st.Mallocs
		case "Frees":
			dst = &st.Frees
		case "NextGC":
			dst = &st.NextGC
		case "LastGC":
			dst = &st.LastGC
		case "NumGC":
			dst = &st.NumGC
		case "NumForcedGC":
			dst = &st.NumForcedGC
		case "MaxRSS":
			dst = &st.MaxRSS
		case "PauseNs", "PauseEnd":
			ring, err := parseUintList(value)
			if err != nil {
				return st, fmt.Errorf("memstats %s: %w", name, err)
			}
			if name == "PauseNs" {
				pauseNs = ring
			} else {
				pauseEnd = ring
			}
			continue
		case "GCCPUFraction":
			f, err := strconv.ParseFloat(value, 64)
			if err != nil {
				return st, fmt.Errorf("memstats GCCPUFraction %q: %w", value, err)
			}
			st.GCCPUFraction = f
			seen++
			continue
		default:
			continue
		}
		v, err := strconv.ParseUint(value, 10, 64)
		if err != nil {
			return st, fmt.Errorf("memstats %s %q: %w", name, value, err)
		}
		*dst = v
		seen++
	}
	if err := sc.Err(); err != nil {
		return st, fmt.Errorf("memstats: %w", err)
	}
	if !inStats || seen == 0 {
		return st, ErrNoMemStats
	}
	st.Source = "heap?debug=1"
	st.Pauses = orderPauses(pauseNs, pauseEnd, st.NumGC)
	return st, nil
}

// parseUintList parses "[1 2 3]".
func parseUintList(s string) ([]uint64, error) {
	s = strings.TrimSpace(s)
	if !strings.HasPrefix(s, "[") || !strings.HasSuffix(s, "]") {
		return nil, fmt.Errorf("want [n n ...], got %.40q", s)
	}
	fields := strings.Fields(s[1 : len(s)-1])
	out := make([]uint64, len(fields))
	for i, f := range fields {
		v, err := strconv.ParseUint(f, 10, 64)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

// orderPauses unrolls the runtime's circular pause buffers, where the most
// recent pause sits at index (NumGC+255)%256, into oldest-first order.
func orderPauses(ns, end []uint64, numGC uint64) []Pause {
	n := len(ns)
	if n == 0 || len(end) != n {
		return nil
	}
	count := int(min(numGC, uint64(n)))
	out := make([]Pause, 0, count)
	for i := count; i > 0; i-- {
		j := int((numGC - uint64(i)) % uint64(n))
		out = append(out, Pause{End: end[j], Ns: ns[j]})
	}
	return out
}
