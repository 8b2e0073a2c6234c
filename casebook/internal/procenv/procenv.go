// Package procenv gives a casebook service the Go runtime environment
// (GOMAXPROCS, GOGC) its variant runs with, where an outside observer sees
// it as in production: in /proc/PID/environ. A runtime.GOMAXPROCS call
// alone would be invisible to a tool reading the environment.
package procenv

import (
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"syscall"
)

// Setup gives the process the environment want (an empty value means
// unset). With reexec, when the environment differs, it replaces the
// process image with the same executable, arguments and the corrected
// environment (syscall.Exec: the PID, open stdout/stderr and parent stay the
// same) and so does not return on success; call it first thing, before any
// listener is opened. Without reexec (tests, benchmarks, a process that
// does more) it applies GOMAXPROCS and GOGC with runtime.GOMAXPROCS and
// debug.SetGCPercent and returns a function that restores them.
func Setup(want map[string]string, reexec bool) (restore func(), err error) {
	if !reexec {
		procs := runtime.NumCPU()
		if n, err := strconv.Atoi(want["GOMAXPROCS"]); err == nil {
			procs = n
		}
		gc := 100
		if n, err := strconv.Atoi(want["GOGC"]); err == nil {
			gc = n
		}
		oldProcs, oldGC := runtime.GOMAXPROCS(procs), debug.SetGCPercent(gc)
		return func() { runtime.GOMAXPROCS(oldProcs); debug.SetGCPercent(oldGC) }, nil
	}
	environ := os.Environ()
	same := true
	for k, v := range want {
		if have, set := os.LookupEnv(k); have != v || set != (v != "") {
			same = false
			environ = With(environ, k, v)
		}
	}
	if same {
		return func() {}, nil
	}
	// /proc/self/exe names this very executable even if its file was
	// replaced or removed (go run).
	err = syscall.Exec("/proc/self/exe", os.Args, environ)
	return nil, fmt.Errorf("procenv: re-exec with %v: %w", want, err)
}

// With returns environ with key set to value, or removed when value is "".
func With(environ []string, key, value string) []string {
	out := make([]string, 0, len(environ)+1)
	for _, kv := range environ {
		if len(kv) > len(key) && kv[:len(key)+1] == key+"=" {
			continue
		}
		out = append(out, kv)
	}
	if value != "" {
		out = append(out, key+"="+value)
	}
	return out
}
