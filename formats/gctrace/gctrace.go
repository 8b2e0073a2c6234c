// Package gctrace parses the collector's own log, the lines a Go program
// writes to stderr under GODEBUG=gctrace=1:
//
//	gc 7 @1.562s 8%: 0.031+30+0.023 ms clock, 0.062+0.054/16/21+0.047 ms cpu, 27->29->18 MB, 32 MB goal, 0 MB stacks, 0 MB globals, 2 P
//
// that is: cycle number, time since program start, GC CPU share since
// program start; wall time of the sweep-termination (STW), concurrent mark
// and mark-termination (STW) phases; CPU time of sweep termination, mark
// assists / background marking / idle marking, and mark termination; heap at
// the start of the cycle, at its end, and live (marked); the heap goal; the
// stacks and globals scanned (Go >= 1.18); the number of Ps. A trailing
// "(forced)" marks a cycle started by runtime.GC.
//
// Parsing streams: Parser reads one cycle at a time and Summarize keeps
// aggregates only, so a day of logs costs no memory. Lines that are not GC
// cycles (the program's own output, scavenger lines, log prefixes before
// "gc N @") are skipped; malformed cycle lines are counted, not fatal.
package gctrace

import (
	"bufio"
	"errors"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// Cycle is one GC cycle as the runtime logged it.
type Cycle struct {
	N      int
	At     time.Duration // since program start
	Share  float64       // GC CPU share since program start (the P% field), 0..1
	Forced bool          // started by runtime.GC ("(forced)")

	// Wall-clock phases: sweep termination (STW), concurrent mark, mark
	// termination (STW).
	SweepTerm, Mark, MarkTerm time.Duration
	// CPU time: sweep termination, mark assists, background and idle
	// marking, mark termination.
	CPUSweepTerm, CPUAssist, CPUBackground, CPUIdle, CPUMarkTerm time.Duration

	HeapStart, HeapEnd, HeapLive, Goal uint64 // bytes (logged in whole MB)
	Stacks, Globals                    uint64 // bytes; 0 before Go 1.18
	Procs                              int    // GOMAXPROCS
}

// STW is the cycle's stop-the-world time: sweep and mark termination.
func (c Cycle) STW() time.Duration { return c.SweepTerm + c.MarkTerm }

// CPU is the CPU the cycle's phases used, idle marking excluded: idle Ps
// marking costs the program nothing. Background sweeping is not logged.
func (c Cycle) CPU() time.Duration {
	return c.CPUSweepTerm + c.CPUAssist + c.CPUBackground + c.CPUMarkTerm
}

// ErrNotCycle is returned by ParseLine for a line that holds no GC cycle.
var ErrNotCycle = errors.New("not a gctrace cycle line")

// ParseLine parses one line. Text before "gc N @" (a log prefix) is ignored.
func ParseLine(line string) (Cycle, error) {
	var c Cycle
	start := findStart(line)
	if start < 0 {
		return c, ErrNotCycle
	}
	line = strings.TrimSpace(line[start:])
	head, body, ok := strings.Cut(line, ": ")
	if !ok {
		return c, errMalformed("no ': ' after the header")
	}
	hf := strings.Fields(head) // gc N @Ts P%
	if len(hf) != 4 || !strings.HasPrefix(hf[2], "@") || !strings.HasSuffix(hf[2], "s") || !strings.HasSuffix(hf[3], "%") {
		return c, errMalformed("header")
	}
	n, err := strconv.Atoi(hf[1])
	if err != nil || n < 0 {
		return c, errMalformed("cycle number")
	}
	c.N = n
	at, err := parseNum(hf[2][1 : len(hf[2])-1])
	if err != nil {
		return c, errMalformed("time")
	}
	c.At = seconds(at)
	pct, err := parseNum(hf[3][:len(hf[3])-1])
	if err != nil {
		return c, errMalformed("percent")
	}
	c.Share = pct / 100
	if s, ok := strings.CutSuffix(body, "(forced)"); ok {
		body, c.Forced = strings.TrimSpace(s), true
	}
	var haveClock, haveHeap bool
	for part := range strings.SplitSeq(body, ", ") {
		part = strings.TrimSpace(part)
		switch {
		case strings.HasSuffix(part, " ms clock"):
			v, err := nums(strings.TrimSuffix(part, " ms clock"), "+", 3)
			if err != nil {
				return c, errMalformed("clock")
			}
			c.SweepTerm, c.Mark, c.MarkTerm = ms(v[0]), ms(v[1]), ms(v[2])
			haveClock = true
		case strings.HasSuffix(part, " ms cpu"):
			v, err := nums(strings.TrimSuffix(part, " ms cpu"), "+", 3)
			if err != nil {
				return c, errMalformed("cpu")
			}
			// the middle term is assist/background/idle
			mid := strings.Split(strings.Split(strings.TrimSuffix(part, " ms cpu"), "+")[1], "/")
			c.CPUSweepTerm, c.CPUMarkTerm = ms(v[0]), ms(v[2])
			if len(mid) == 3 {
				var m [3]float64
				for i, s := range mid {
					if m[i], err = parseNum(s); err != nil {
						return c, errMalformed("cpu")
					}
				}
				c.CPUAssist, c.CPUBackground, c.CPUIdle = ms(m[0]), ms(m[1]), ms(m[2])
			} else {
				c.CPUBackground = ms(v[1])
			}
		case strings.HasSuffix(part, " MB goal"):
			c.Goal, err = mb(strings.TrimSuffix(part, " MB goal"))
		case strings.HasSuffix(part, " MB stacks"):
			c.Stacks, err = mb(strings.TrimSuffix(part, " MB stacks"))
		case strings.HasSuffix(part, " MB globals"):
			c.Globals, err = mb(strings.TrimSuffix(part, " MB globals"))
		case strings.HasSuffix(part, " MB") && strings.Contains(part, "->"):
			f := strings.Split(strings.TrimSuffix(part, " MB"), "->")
			if len(f) != 3 {
				return c, errMalformed("heap")
			}
			var h [3]uint64
			for i, s := range f {
				if h[i], err = mb(s); err != nil {
					return c, errMalformed("heap")
				}
			}
			c.HeapStart, c.HeapEnd, c.HeapLive = h[0], h[1], h[2]
			haveHeap = true
		case strings.HasSuffix(part, " P"):
			c.Procs, err = strconv.Atoi(strings.TrimSuffix(part, " P"))
			if err == nil && c.Procs < 0 {
				err = errMalformed("P")
			}
		}
		if err != nil {
			return c, errMalformed(part)
		}
	}
	if !haveClock || !haveHeap {
		return c, errMalformed("missing clock or heap fields")
	}
	return c, nil
}

type malformedError string

func (e malformedError) Error() string { return "malformed gctrace line: " + string(e) }

func errMalformed(what string) error {
	if len(what) > 40 {
		what = what[:40]
	}
	return malformedError(what)
}

// findStart returns the index of "gc N @" in line, or -1.
func findStart(line string) int {
	off := 0
	for {
		i := strings.Index(line[off:], "gc ")
		if i < 0 {
			return -1
		}
		i += off
		if i == 0 || line[i-1] == ' ' || line[i-1] == '\t' || line[i-1] == ']' || line[i-1] == ':' {
			j := i + 3
			k := j
			for k < len(line) && line[k] >= '0' && line[k] <= '9' {
				k++
			}
			if k > j && strings.HasPrefix(line[k:], " @") {
				return i
			}
		}
		off = i + 3
	}
}

func parseNum(s string) (float64, error) {
	v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, errMalformed("number")
	}
	return v, nil
}

// nums splits s on sep into exactly want numbers; a field "a/b/c" counts
// as the sum of its parts.
func nums(s, sep string, want int) ([]float64, error) {
	f := strings.Split(s, sep)
	if len(f) != want {
		return nil, errMalformed("field count")
	}
	out := make([]float64, want)
	for i, x := range f {
		for y := range strings.SplitSeq(x, "/") {
			v, err := parseNum(y)
			if err != nil {
				return nil, err
			}
			out[i] += v
		}
	}
	return out, nil
}

func mb(s string) (uint64, error) {
	v, err := parseNum(s)
	if err != nil || v > 1<<43 {
		return 0, errMalformed("MB")
	}
	return uint64(v * (1 << 20)), nil
}

func ms(v float64) time.Duration { return dur(v * float64(time.Millisecond)) }

func seconds(v float64) time.Duration { return dur(v * float64(time.Second)) }

func dur(ns float64) time.Duration {
	if ns > math.MaxInt64/2 {
		return math.MaxInt64 / 2
	}
	return time.Duration(ns)
}

// Parser reads cycles from a stream, one at a time.
type Parser struct {
	sc        *bufio.Scanner
	Lines     int // lines read
	Malformed int // lines that looked like cycles but did not parse
}

// NewParser reads from r. Lines longer than 1 MiB are skipped by the scanner's error.
func NewParser(r io.Reader) *Parser {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	return &Parser{sc: sc}
}

// Next returns the next cycle, or io.EOF at the end of the stream.
func (p *Parser) Next() (Cycle, error) {
	for p.sc.Scan() {
		p.Lines++
		c, err := ParseLine(p.sc.Text())
		switch {
		case err == nil:
			return c, nil
		case errors.Is(err, ErrNotCycle):
		default:
			p.Malformed++
		}
	}
	if err := p.sc.Err(); err != nil {
		return Cycle{}, err
	}
	return Cycle{}, io.EOF
}

// Summary is what a gctrace log says about the collector.
type Summary struct {
	Cycles    int // cycles parsed
	Forced    int // of them, started by runtime.GC
	Malformed int // lines that looked like cycles but did not parse
	Restarts  int // times the cycle number went backwards (several processes in one log)
	First     Cycle
	Last      Cycle

	// Span is from the first cycle to the last (of the last process run).
	Span         time.Duration
	CyclesPerSec float64 // cycles after the first over Span; 0 with one cycle

	// STW is the distribution of stop-the-world time per cycle (sweep
	// termination + mark termination).
	STW   Dist
	Mark  Dist // concurrent mark wall time per cycle
	Procs int  // GOMAXPROCS of the last cycle

	// CPUShare is GC CPU over the span: the CPU of the cycles after the
	// first over Span × GOMAXPROCS (idle marking excluded, background
	// sweeping not logged). CumulativeShare is the runtime's own P% of the
	// last cycle, since program start.
	CPUShare        float64
	CumulativeShare float64
	AssistShare     float64 // mark-assist CPU over Span × GOMAXPROCS

	// Heap figures over the cycles, in bytes.
	HeapLiveMin, HeapLiveMax, HeapLiveMean uint64
	HeapPeak                               uint64 // largest heap at the end of a cycle
	Goal                                   uint64 // of the last cycle
}

// Dist is a distribution of durations.
type Dist struct {
	Count               int64
	Mean, P50, P99, Max time.Duration
	Total               time.Duration
	hist                *hdrhistogram.Histogram
}

func (d *Dist) add(v time.Duration) {
	if d.hist == nil {
		d.hist = hdrhistogram.New(1, int64(time.Hour/time.Microsecond), 3)
	}
	us := max(int64(v/time.Microsecond), 1)
	_ = d.hist.RecordValue(min(us, d.hist.HighestTrackableValue()))
	d.Count++
	d.Total += v
	d.Max = max(d.Max, v)
}

func (d *Dist) finish() {
	if d.Count == 0 {
		return
	}
	d.Mean = d.Total / time.Duration(d.Count)
	d.P50 = time.Duration(d.hist.ValueAtQuantile(50)) * time.Microsecond
	d.P99 = min(time.Duration(d.hist.ValueAtQuantile(99))*time.Microsecond, d.Max)
	d.hist = nil
}

// ErrNoCycles is returned by Summarize when the input holds no GC cycle.
var ErrNoCycles = errors.New("no gctrace lines (gc N @...) found: run the program with GODEBUG=gctrace=1 and capture its stderr")

// Summarize reads a whole log. When the cycle numbers restart (the log of
// several runs), the summary covers the last run.
func Summarize(r io.Reader) (*Summary, error) {
	p := NewParser(r)
	var s Summary
	var liveSum float64
	var cpu, assist time.Duration
	for {
		c, err := p.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		if s.Cycles > 0 && (c.N <= s.Last.N || c.At < s.Last.At) {
			restarts := s.Restarts + 1
			s = Summary{Restarts: restarts}
			liveSum, cpu, assist = 0, 0, 0
		}
		if s.Cycles == 0 {
			s.First = c
			s.HeapLiveMin = c.HeapLive
		} else {
			cpu += c.CPU()
			assist += c.CPUAssist
		}
		s.Cycles++
		s.Last = c
		if c.Forced {
			s.Forced++
		}
		s.STW.add(c.STW())
		s.Mark.add(c.Mark)
		liveSum += float64(c.HeapLive)
		s.HeapLiveMin = min(s.HeapLiveMin, c.HeapLive)
		s.HeapLiveMax = max(s.HeapLiveMax, c.HeapLive)
		s.HeapPeak = max(s.HeapPeak, c.HeapEnd)
	}
	s.Malformed = p.Malformed
	if s.Cycles == 0 {
		return nil, ErrNoCycles
	}
	s.STW.finish()
	s.Mark.finish()
	s.Procs = s.Last.Procs
	s.Goal = s.Last.Goal
	s.CumulativeShare = s.Last.Share
	s.HeapLiveMean = uint64(liveSum / float64(s.Cycles))
	s.Span = s.Last.At - s.First.At
	if s.Span > 0 && s.Cycles > 1 {
		s.CyclesPerSec = float64(s.Cycles-1) / s.Span.Seconds()
		if s.Procs > 0 {
			avail := s.Span.Seconds() * float64(s.Procs)
			s.CPUShare = min(cpu.Seconds()/avail, 1)
			s.AssistShare = min(assist.Seconds()/avail, 1)
		}
	}
	return &s, nil
}
