// Package progress shows a one-line status for long work (a 30 s profile, a
// load run) on a terminal, and stays silent when output goes to a pipe, a file
// or CI, so logs are not littered with carriage returns.
package progress

import (
	"fmt"
	"io"
	"os"
	"sync"
)

// Line is a rewritable status line. The zero value and a nil *Line are silent.
type Line struct {
	mu      sync.Mutex
	w       io.Writer
	lastLen int
}

// New returns a Line writing to f when f is a terminal and CI is not set;
// otherwise a silent Line.
func New(f *os.File) *Line {
	if f == nil || os.Getenv("CI") != "" || !isTerminal(f) {
		return &Line{}
	}
	return &Line{w: f}
}

// To returns a Line that always writes to w (for tests and forced output).
func To(w io.Writer) *Line { return &Line{w: w} }

func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// Active reports whether updates are shown.
func (l *Line) Active() bool { return l != nil && l.w != nil }

// Update replaces the status line.
func (l *Line) Update(format string, args ...any) {
	if !l.Active() {
		return
	}
	msg := fmt.Sprintf(format, args...)
	l.mu.Lock()
	defer l.mu.Unlock()
	pad := l.lastLen - len(msg)
	if pad < 0 {
		pad = 0
	}
	fmt.Fprintf(l.w, "\r%s%*s", msg, pad, "")
	l.lastLen = len(msg)
}

// Clear erases the status line so regular output can follow.
func (l *Line) Clear() {
	if !l.Active() {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.lastLen > 0 {
		fmt.Fprintf(l.w, "\r%*s\r", l.lastLen, "")
		l.lastLen = 0
	}
}
