package evidence

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strings"

	"github.com/google/pprof/profile"
	"github.com/perfdoctor/perfdoctor/evidence/folded"
	"github.com/perfdoctor/perfdoctor/evidence/jfr"
)

// Exceptions is a profile of where exceptions were thrown (JFR's
// jdk.JavaExceptionThrow and jdk.JavaErrorThrow), sample type exceptions/count.
const Exceptions Kind = "exceptions"

// readJFR converts a recording with the JDK's jfr tool and files its
// profiles and JVM summary.
func (e *Evidence) readJFR(path string) (string, error) {
	rec, err := jfr.ConvertFile(context.Background(), path)
	if err != nil {
		return "", err
	}
	for kind, p := range map[Kind]*profile.Profile{CPU: rec.CPU, Allocs: rec.Allocs, Mutex: rec.Monitor, Block: rec.Wait, Exceptions: rec.Exceptions} {
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

// readFolded reads folded stacks as a CPU profile, its counts read as
// the load options say; a guess about them is noted on the file.
func (e *Evidence) readFolded(data []byte, f *File) (string, error) {
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
func (e *Evidence) readJVMSummary(data []byte) (string, error) {
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

// readHeadIsJFR peeks at a file's start, so that recordings, which can be
// far larger than other inputs, are handed to the jfr tool unread.
func readHeadIsJFR(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	head := make([]byte, len(jfr.Magic))
	n, _ := f.Read(head)
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
