// Package goroutines reads a Go goroutine dump: the text of
// /debug/pprof/goroutine?debug=2, which is also what an unrecovered panic
// or SIGQUIT prints. Unlike the goroutine profile it gives each goroutine's
// wait reason, how long it has been blocked (from one minute on) and the go
// statement that created it.
package goroutines

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// Frame is one function in a stack.
type Frame struct {
	Func string `json:"function"`
	File string `json:"file,omitempty"`
	Line int64  `json:"line,omitempty"`
}

// Goroutine is one goroutine of a dump.
type Goroutine struct {
	ID    int64
	State string // the wait reason or status: "chan send", "select", "IO wait", "running"
	// Wait is how long the goroutine has been blocked, as the runtime
	// reports it: in whole minutes, and only from one minute on.
	Wait time.Duration
	// Leaked is set when the runtime's leak detector (the goroutineleak
	// profile's GC cycle, Go >= 1.26 with the experiment, 1.27) proved the
	// goroutine can never be woken.
	Leaked    bool
	Stack     []Frame // innermost first
	CreatedBy Frame   // the go statement; zero for the main goroutine
}

// Dump is a parsed goroutine dump.
type Dump struct {
	Goroutines []Goroutine
}

// ErrNotDump is returned by Parse for text that is not a goroutine dump.
var ErrNotDump = errors.New("not a goroutine dump")

// Looks reports whether data starts like a goroutine dump.
func Looks(data []byte) bool {
	line, _, _ := bytes.Cut(data, []byte("\n"))
	_, err := parseHeader(string(bytes.TrimRight(line, "\r")))
	return err == nil
}

// maxLine bounds one line of a dump; function arguments and long paths stay
// far below it.
const maxLine = 1 << 20

// Parse reads a dump. Lines it does not understand inside a goroutine's
// block (elided frames) are skipped; a dump that does not start with a
// goroutine header is ErrNotDump.
func Parse(r io.Reader) (*Dump, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxLine)
	d := &Dump{}
	var g *Goroutine
	var pending *Frame // a function line waiting for its file:line
	created := false   // pending is the creator
	lineNo := 0
	for sc.Scan() {
		lineNo++
		line := strings.TrimRight(sc.Text(), "\r")
		switch {
		case line == "":
			pending = nil
			continue
		case strings.HasPrefix(line, "goroutine "):
			h, err := parseHeader(line)
			if err != nil {
				return nil, fmt.Errorf("line %d: %w", lineNo, err)
			}
			d.Goroutines = append(d.Goroutines, h)
			g, pending, created = &d.Goroutines[len(d.Goroutines)-1], nil, false
			continue
		}
		if g == nil {
			return nil, ErrNotDump
		}
		if strings.HasPrefix(line, "\t") {
			if pending == nil {
				continue
			}
			file, ln := parseFileLine(strings.TrimSpace(line))
			pending.File, pending.Line = file, ln
			if created {
				g.CreatedBy = *pending
			} else {
				g.Stack = append(g.Stack, *pending)
			}
			pending, created = nil, false
			continue
		}
		if rest, ok := strings.CutPrefix(line, "created by "); ok {
			fn, _, _ := strings.Cut(rest, " in goroutine ")
			pending, created = &Frame{Func: fn}, true
			continue
		}
		if strings.HasPrefix(line, "...") { // "...additional frames elided..."
			pending = nil
			continue
		}
		pending, created = &Frame{Func: funcName(line)}, false
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("goroutine dump: %w", err)
	}
	if len(d.Goroutines) == 0 {
		return nil, ErrNotDump
	}
	return d, nil
}

// parseHeader reads "goroutine 7 [chan receive, 3 minutes]:" and its
// variants ("goroutine 1 gp=0x... m=0 mp=0x... [running]:" under
// GOTRACEBACK=system, ", locked to thread", " (leaked)").
func parseHeader(line string) (Goroutine, error) {
	rest, ok := strings.CutPrefix(line, "goroutine ")
	open, close := strings.IndexByte(rest, '['), strings.LastIndexByte(rest, ']')
	if !ok || open < 0 || close < open || !strings.HasSuffix(rest, ":") {
		return Goroutine{}, fmt.Errorf("%w: bad header %q", ErrNotDump, truncate(line))
	}
	idText, _, _ := strings.Cut(strings.TrimSpace(rest[:open]), " ")
	id, err := strconv.ParseInt(idText, 10, 64)
	if err != nil {
		return Goroutine{}, fmt.Errorf("%w: bad goroutine id in %q", ErrNotDump, truncate(line))
	}
	g := Goroutine{ID: id}
	for i, part := range strings.Split(rest[open+1:close], ", ") {
		if i == 0 {
			state, leaked := strings.CutSuffix(part, " (leaked)")
			g.State, g.Leaked = state, leaked
			continue
		}
		if n, ok := strings.CutSuffix(part, " minutes"); ok {
			if m, err := strconv.Atoi(n); err == nil && m >= 0 {
				g.Wait = time.Duration(m) * time.Minute
			}
		}
	}
	return g, nil
}

// funcName strips the argument list from a frame line:
// "main.(*T).serve(0xc000010000, ...)" -> "main.(*T).serve".
func funcName(line string) string {
	if !strings.HasSuffix(line, ")") {
		return line
	}
	depth := 0
	for i := len(line) - 1; i >= 0; i-- {
		switch line[i] {
		case ')':
			depth++
		case '(':
			depth--
			if depth == 0 {
				return line[:i]
			}
		}
	}
	return line
}

// parseFileLine reads "/src/main.go:42 +0x1d" (the offset is optional).
func parseFileLine(s string) (string, int64) {
	s, _, _ = strings.Cut(s, " +0x")
	i := strings.LastIndexByte(s, ':')
	if i < 0 {
		return s, 0
	}
	n, err := strconv.ParseInt(s[i+1:], 10, 64)
	if err != nil {
		return s, 0
	}
	return s[:i], n
}

func truncate(s string) string {
	if len(s) > 80 {
		return s[:80] + "..."
	}
	return s
}

// Blocked reports whether the goroutine is parked on something (a channel,
// a lock, a timer, the network) rather than running or runnable.
func (g Goroutine) Blocked() bool {
	switch g.State {
	case "running", "runnable", "syscall", "":
		return false
	}
	return true
}

// Site is the go statement that created a goroutine: "func file:line".
func (g Goroutine) Site() string {
	if g.CreatedBy.Func == "" {
		return ""
	}
	return fmt.Sprintf("%s %s:%d", g.CreatedBy.Func, g.CreatedBy.File, g.CreatedBy.Line)
}
