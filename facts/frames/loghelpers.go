package frames

import (
	"strings"
	"unicode"

	"github.com/perfdoctor/perfdoctor/evidence"
)

// LogHelpers selects the samples of a program's own logging helpers: Go
// functions named for logging or tracing (traceMsg, traceInOp, Tracef,
// logRequest, Debugf: the name's first word is log, trace or debug) that
// call a logger somewhere in st, in samples outside the logger's frames.
// They build the record the logger writes (its fields, its formatted
// message) and run only because the record is logged: NATS with -DV
// formatted each protocol operation in client.traceMsg, traceInOp and
// client.format, 15% of its CPU beside the 65% under the log package.
// A request handler below the helper is the request's work, not the
// record's.
func LogHelpers(st *evidence.Stacks, loggers evidence.Matcher) func(evidence.Sample) bool {
	if st == nil {
		return func(evidence.Sample) bool { return false }
	}
	named := st.FrameHits(LogHelperName)
	logger := st.FrameHits(loggers)
	handler := st.FrameHits(HandlerName)
	// The helpers that call a logger: a logger's frame nearer the leaf
	// than theirs on some sample.
	calls := map[string]bool{}
	for _, s := range st.Samples {
		below := false
		for _, id := range s.Frames {
			if logger[id] {
				below = true
			} else if below && named[id] {
				calls[st.Frames[id].Func] = true
			}
		}
	}
	if len(calls) == 0 {
		return func(evidence.Sample) bool { return false }
	}
	return func(s evidence.Sample) bool {
		for _, id := range s.Frames { // leaf first
			switch {
			case logger[id]:
				return false // the logger's own: its family counts it
			case handler[id]:
				return false
			case calls[st.Frames[id].Func]:
				return true
			}
		}
		return false
	}
}

// LogHelperName says whether a Go function's own name (its last element,
// a closure's method) starts with the word log, trace or debug: traceMsg,
// Tracef, logRequest, Debugf, debugln; not login, tracer or logical.
func LogHelperName(fn string) bool {
	pkg := evidence.PackagePath(fn)
	if pkg == "" {
		return false
	}
	parts := strings.Split(fn[len(pkg):], ".")
	name := ""
	for i := len(parts) - 1; i >= 0; i-- {
		p := strings.TrimSuffix(strings.TrimPrefix(parts[i], "(*"), ")")
		if p != "" && !(strings.HasPrefix(p, "func") && strings.TrimLeft(p[4:], "0123456789") == "") {
			name = p
			break
		}
	}
	for _, w := range []string{"log", "trace", "debug"} {
		if len(name) < len(w) || !strings.EqualFold(name[:len(w)], w) {
			continue
		}
		switch rest := name[len(w):]; {
		case rest == "", rest == "f", rest == "ln", rest == "w":
			return true
		default:
			if r := []rune(rest)[0]; unicode.IsUpper(r) {
				return true
			}
		}
	}
	return false
}

// HandlerName reports whether a Go function is a request handler or part
// of one: a method or function named Serve... or Handle... (ServeHTTP,
// ServeDNS, HandleFunc), closures in it included.
func HandlerName(fn string) bool {
	pkg := evidence.PackagePath(fn)
	if pkg == "" {
		return false
	}
	for _, part := range strings.Split(fn[len(pkg):], ".") {
		part = strings.TrimPrefix(strings.TrimSuffix(strings.TrimPrefix(part, "(*"), ")"), "(")
		if strings.HasPrefix(part, "Serve") || strings.HasPrefix(part, "Handle") {
			return true
		}
	}
	return false
}
