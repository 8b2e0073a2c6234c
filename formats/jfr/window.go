package jfr

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// A JVM's flight recorder shares its disk repository among recordings: a
// recording dumped right after another one can carry the other's chunk,
// and events that began before it started (a monitor wait of seconds, the
// JVM's own record of the recording). Read with a window, a recording
// keeps what happened inside it alone.

// Window is a span of time a read is limited to.
type Window struct {
	Since, Until time.Time
}

// ReadFileWindow decodes the recording at path keeping only what happened
// in w: events outside it are dropped, and the part of a timed event (a
// wait, a pause) outside it is cut off. The recording's span is w itself,
// so rates are per the window. The JVM's description of itself (its
// version, flags, properties, collector, settings) is kept whenever it
// was written.
func ReadFileWindow(path string, w Window) (*Recording, error) {
	if w.Since.IsZero() || !w.Until.After(w.Since) {
		return nil, fmt.Errorf("window %s to %s is empty", w.Since, w.Until)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	rec, err := read(f, &w)
	if err != nil {
		return rec, fmt.Errorf("%s: %w", path, err)
	}
	return rec, nil
}

// describesJVM are the events that describe the JVM and the recording
// rather than something that happened: kept whatever their time (the JVM
// writes them when a chunk begins, which may be before the window).
var describesJVM = map[string]bool{
	"JVMInformation": true, "InitialSystemProperty": true, "CPUInformation": true, "GCConfiguration": true,
	"ActiveRecording": true, "ActiveSetting": true,
	"BooleanFlag": true, "IntFlag": true, "UnsignedIntFlag": true, "LongFlag": true, "UnsignedLongFlag": true,
	"DoubleFlag": true, "StringFlag": true,
}

// admit says whether ev is kept under the window w (nil: everything),
// cutting a timed event to the window, and whether its time extends the
// recording's span (never under a window, whose span is fixed).
func (w *Window) admit(ev *event) (keep, span bool) {
	if w == nil {
		return true, true
	}
	typ := strings.TrimPrefix(ev.Type, "jdk.")
	if describesJVM[typ] || strings.HasPrefix(typ, "profiler.") && !strings.HasSuffix(typ, "Sample") {
		return true, false
	}
	v := &ev.Values
	if v.StartTime.IsZero() {
		return true, false
	}
	start, end := v.StartTime, v.StartTime.Add(max(time.Duration(v.Duration), 0))
	if end.Before(w.Since) || start.After(w.Until) {
		return false, false
	}
	if start.Before(w.Since) {
		start = w.Since
	}
	if end.After(w.Until) {
		end = w.Until
	}
	if v.Duration > 0 {
		v.StartTime, v.Duration = start, jsonDur(end.Sub(start))
	}
	return true, false
}

// read is Read, limited to w when it is not nil.
func read(r io.Reader, w *Window) (*Recording, error) {
	c := newConverter()
	if w != nil {
		c.window = w
		c.first, c.last = w.Since, w.Until
	}
	return readInto(c, r, Events)
}
