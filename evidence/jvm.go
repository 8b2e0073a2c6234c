package evidence

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"

	"github.com/google/pprof/profile"
	"github.com/perfdoctor/perfdoctor/formats/folded"
	"github.com/perfdoctor/perfdoctor/formats/jfr"
)

// Exceptions is a profile of where exceptions were thrown (JFR's
// jdk.JavaExceptionThrow and jdk.JavaErrorThrow), sample type exceptions/count.
const Exceptions Kind = "exceptions"

// Wall is wall-clock samples (async-profiler's wall mode): where threads
// spent time, running or not. No CPU rule reads it as CPU.
const Wall Kind = "wall"

// readJFR decodes a recording (gzipped or not) with the native reader and
// files its profiles and JVM summary; a recording cut short keeps its
// complete chunks and marks the file partial.
func (e *loader) readJFR(path string, f *File) (string, error) {
	file, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer file.Close()
	r, err := gunzipped(file)
	if err != nil {
		return "", fmt.Errorf("gzipped JFR recording: %w", err)
	}
	rec, err := jfr.Read(r)
	if err != nil {
		return "", fmt.Errorf("JFR recording: %w", err)
	}
	f.Partial = rec.Partial
	f.Note = jfrNote(rec)
	for kind, p := range map[Kind]*profile.Profile{CPU: rec.CPU, Allocs: rec.Allocs, Mutex: rec.Monitor, Block: rec.Wait, Exceptions: rec.Exceptions, Wall: rec.Wall} {
		if p == nil {
			continue
		}
		if _, err := e.addProfile(kind, p); err != nil {
			return "", err
		}
	}
	e.JVM = rec.JVM
	return "jfr", nil
}

// jfrNote says where a recording's CPU profile came from when that is not
// the usual execution sampler: JDK 25's CPU-time sampler, or wall-clock
// samples of running threads; or that it has wall-clock samples only.
func jfrNote(rec *jfr.Recording) string {
	s := rec.JVM
	switch {
	case rec.CPU == nil && rec.Wall != nil:
		return fmt.Sprintf("wall-clock samples only (%d), none of a running thread: where threads waited, not CPU time, so no CPU rule reads them; record with event=cpu (or itimer) for CPU", SampleCount(rec.Wall))
	case s == nil:
		return ""
	case s.Sampler == jfr.SamplerRunning:
		return fmt.Sprintf("CPU derived from wall-clock samples: the %d of %d whose thread was running (STATE_RUNNABLE), as Pyroscope reads wall-clock recordings; a running thread may still wait inside a system call, so record with event=cpu (or itimer) for measured CPU",
			SampleCount(rec.CPU), SampleCount(rec.Wall))
	case s.Sampler == jfr.SamplerCPUTime:
		note := fmt.Sprintf("CPU from jdk.CPUTimeSample (JDK 25's CPU-time sampler, JEP 509: threads in Java, the VM and native code), %d samples", s.CPUTimeSamples)
		if s.CPUTimeFailed > 0 {
			note += fmt.Sprintf(", %d without a stack (the walk failed)", s.CPUTimeFailed)
		}
		if s.CPUTimeLost > 0 {
			note += fmt.Sprintf(", %d more lost by the JVM", s.CPUTimeLost)
		}
		return note
	}
	return ""
}

// readFolded reads folded stacks as a CPU profile, its counts read as
// the load options say; a guess about them is noted on the file.
func (e *loader) readFolded(data []byte, f *File) (string, error) {
	res, err := folded.ParseWith(bytes.NewReader(data), folded.Options{Weights: e.opt.FoldedWeights})
	if err != nil {
		return "", err
	}
	if _, err := e.addProfile(CPU, res.Profile); err != nil {
		return "", err
	}
	f.Note = res.Assumed
	return "folded", nil
}

// readJVMSummary reads the JVM summary a collection wrote (jvm.json).
func (e *loader) readJVMSummary(data []byte) (string, error) {
	var s jfr.Summary
	if err := json.Unmarshal(data, &s); err != nil {
		return "", fmt.Errorf("JVM summary: %w", err)
	}
	e.JVM = &s
	return "jvm", nil
}

// isJVMSummary tells a JVM summary from other JSON by its format field.
func isJVMSummary(keys map[string]json.RawMessage) bool {
	return string(keys["format"]) == `"`+jfr.SummaryFormat+`"`
}

// isJFRMonitor reports whether a contention profile came from JFR's
// monitor events.
func isJFRMonitor(p *profile.Profile) bool {
	for _, c := range p.Comments {
		if c == jfr.MonitorComment {
			return true
		}
	}
	return false
}

// isJFRFile peeks at a file's start (inside gzip too), so that recordings,
// which can be far larger than other inputs, are streamed chunk by chunk
// rather than read whole.
func isJFRFile(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	r, err := gunzipped(f)
	if err != nil {
		return false
	}
	head := make([]byte, len(jfr.Magic))
	n, _ := io.ReadFull(r, head)
	return jfr.IsRecording(head[:n])
}

var (
	// javaMethod matches JVM method names as converters write them
	// ("com.acme.api.Server.handle", "java.lang.String.equals"): at least
	// two lowercase package segments. Go's single-segment packages
	// ("time.Time.Format") have one; Go closures are told by their suffix.
	javaMethod = regexp.MustCompile(`^[a-z_][\w]*\.[a-z_][\w]*\.[\w$.<>]+$`)
	goClosure  = regexp.MustCompile(`\.(func|gowrap)\d`)
	jdkPrefix  = []string{"java.", "javax.", "jdk.", "sun.", "com.sun."}
)

// IsJava reports whether a function name is a JVM method in a package.
func IsJava(fn string) bool { return javaMethod.MatchString(fn) && !goClosure.MatchString(fn) }

// IsJDK reports whether a JVM method belongs to the Java platform.
func IsJDK(fn string) bool {
	for _, p := range jdkPrefix {
		if strings.HasPrefix(fn, p) {
			return true
		}
	}
	return false
}

// IsJavaApp reports whether a function is JVM code outside the JDK: the
// service's own classes and its libraries.
func IsJavaApp(fn string) bool { return IsJava(fn) && !IsJDK(fn) }
