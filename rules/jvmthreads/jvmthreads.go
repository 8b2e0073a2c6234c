// Package jvmthreads holds what the JVM thread rules (JVM009 to JVM014)
// share: the JDK's feature version, the CPUs a JVM saw, and the code site
// a recorded wait names.
package jvmthreads

import (
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/perfdoctor/perfdoctor/formats/jfr"
	"github.com/perfdoctor/perfdoctor/rules"
)

// jreVersion finds the runtime's version in jdk.JVMInformation's
// jvmVersion: "... JRE (25.0.3+9-LTS), built on ..." or "JRE (1.8.0_402-b06)".
var jreVersion = regexp.MustCompile(`JRE \((\d+)(?:\.(\d+))?`)

// Feature is the JDK's feature release (17, 21, 25), from the
// java.specification.version property when recorded, else the JVM's
// version string; 0 when unknown.
func Feature(s *jfr.Summary) int {
	if s == nil {
		return 0
	}
	if v, err := strconv.Atoi(s.Properties["java.specification.version"]); err == nil {
		return v
	}
	m := jreVersion.FindStringSubmatch(s.JVMVersion)
	if m == nil {
		return 0
	}
	n, _ := strconv.Atoi(m[1])
	if n == 1 && m[2] != "" { // 1.8.0: JDK 8
		n, _ = strconv.Atoi(m[2])
	}
	return n
}

// CPUs is the hardware threads the JVM reported (jdk.CPUInformation),
// else the given fallback.
func CPUs(s *jfr.Summary, fallback int) int {
	if s != nil && s.HWThreads > 0 {
		return s.HWThreads
	}
	return fallback
}

// Site is the frame a wait is attributed to: the first frame of the
// service's own code (outside the JDK), else the innermost frame. ok is
// false for an empty stack.
func Site(stack []jfr.StackFrame) (f jfr.StackFrame, ok bool) {
	for _, f := range stack {
		if rules.IsApplication(f.Func) {
			return f, true
		}
	}
	if len(stack) == 0 {
		return f, false
	}
	return stack[0], true
}

// Location is a wait's site as a finding location.
func Location(stack []jfr.StackFrame, share float64, role string) (rules.Location, bool) {
	f, ok := Site(stack)
	if !ok {
		return rules.Location{}, false
	}
	return rules.Location{Function: f.Func, File: f.File, Line: f.Line, Share: share, Role: role}, true
}

// SiteName formats a wait's site as "Class.method (File.java:12)".
func SiteName(stack []jfr.StackFrame) string {
	f, ok := Site(stack)
	if !ok {
		return "an unknown site"
	}
	name := f.Func
	if i := strings.LastIndexByte(name, '.'); i > 0 {
		if j := strings.LastIndexByte(name[:i], '.'); j >= 0 {
			name = name[j+1:] // Class.method
		}
	}
	if f.File != "" && f.Line > 0 {
		name += " (" + path.Base(f.File) + ":" + strconv.FormatInt(f.Line, 10) + ")"
	}
	return name
}

// Locations are the sites of the waits, merged by code site (waits that
// differ only deeper in their stacks are one place to fix), largest share
// of total first, at most n.
func Locations(waits []jfr.WaitSite, total time.Duration, n int, role func(jfr.WaitSite) string) []rules.Location {
	var out []rules.Location
	index := map[string]int{}
	for _, w := range waits {
		share := 0.0
		if total > 0 {
			share = w.Total.Seconds() / total.Seconds()
		}
		l, ok := Location(w.Stack, share, role(w))
		if !ok {
			continue
		}
		key := l.Function + ":" + strconv.FormatInt(l.Line, 10) + ":" + l.Role
		if i, seen := index[key]; seen {
			out[i].Share += share
			continue
		}
		index[key] = len(out)
		out = append(out, l)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Share > out[j].Share })
	return out[:min(len(out), n)]
}
