// Package jfr converts Java Flight Recorder recordings into pprof profiles and
// a JVM summary. Read decodes the binary format natively (JDK 11 to 25 and
// async-profiler recordings, no JDK needed, one chunk in memory at a time);
// ConvertWith reads through the JDK's own jfr tool (`jfr print --json`),
// which the tests keep as the cross-check of the native reader.
package jfr

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// Magic starts every JFR recording (and every chunk in it).
var Magic = []byte("FLR\x00")

// IsRecording reports whether data starts like a JFR recording.
func IsRecording(head []byte) bool { return bytes.HasPrefix(head, Magic) }

// Events are the event types the converter asks the jfr tool for; the rest
// of a recording is not printed.
var Events = []string{
	"jdk.ExecutionSample", "jdk.CPUTimeSample", "jdk.CPUTimeSamplesLost",
	"jdk.ObjectAllocationSample", "jdk.ObjectAllocationInNewTLAB", "jdk.ObjectAllocationOutsideTLAB",
	"jdk.JavaMonitorEnter", "jdk.JavaMonitorWait",
	"jdk.JavaExceptionThrow", "jdk.JavaErrorThrow", "jdk.ExceptionStatistics",
	"jdk.GarbageCollection", "jdk.GCConfiguration", "jdk.SystemGC",
	"jdk.ThreadCPULoad", "jdk.CPULoad", "jdk.CPUInformation",
	"jdk.JVMInformation", "jdk.InitialSystemProperty", "jdk.ActiveRecording", "jdk.ActiveSetting", "jdk.ThreadDump",
	"jdk.BooleanFlag", "jdk.IntFlag", "jdk.UnsignedIntFlag", "jdk.LongFlag", "jdk.UnsignedLongFlag",
	"jdk.DoubleFlag", "jdk.StringFlag",
	"jdk.SafepointBegin", "jdk.ExecuteVMOperation", "jdk.ZAllocationStall", "jdk.EvacuationFailed",
	"jdk.CodeCacheFull", "jdk.CodeCacheStatistics", "jdk.GCCPUTime", "jdk.GCPhaseConcurrent",
	"jdk.SafepointLatency",
}

// ErrNoTool is returned when no jfr tool can be found.
var ErrNoTool = errors.New("the JDK's jfr tool was not found (install a JDK 17 or later, put its bin directory on PATH or set JAVA_HOME)")

// Tool finds the jfr command: on PATH, else under $JAVA_HOME/bin.
func Tool() (string, error) {
	if p, err := exec.LookPath("jfr"); err == nil {
		return p, nil
	}
	if home := os.Getenv("JAVA_HOME"); home != "" {
		p := filepath.Join(home, "bin", "jfr")
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p, nil
		}
	}
	return "", ErrNoTool
}

// ConvertFile converts the recording at path with the jfr tool found by Tool.
func ConvertFile(ctx context.Context, path string) (*Recording, error) {
	tool, err := Tool()
	if err != nil {
		return nil, err
	}
	return ConvertWith(ctx, tool, path)
}

// ConvertWith converts the recording at path using the given jfr command.
func ConvertWith(ctx context.Context, tool, path string) (*Recording, error) {
	// The tool prints 5 frames per stack unless told otherwise; recordings
	// keep 64 by default.
	events := append(slices.Clone(Events), wallClockEvent)
	cmd := exec.CommandContext(ctx, tool, "print", "--json", "--stack-depth", "256", "--events", strings.Join(events, ","), path)
	var stderr bytes.Buffer
	cmd.Stderr = &limitedBuffer{buf: &stderr, max: 4 << 10}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("jfr print: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("jfr print: %w", err)
	}
	rec, perr := Parse(out)
	if perr != nil {
		io.Copy(io.Discard, out) // let the tool finish so Wait returns
	}
	werr := cmd.Wait()
	if werr != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = werr.Error()
		}
		return nil, fmt.Errorf("jfr print %s: %s", path, strings.TrimPrefix(firstLine(msg), "jfr print: "))
	}
	if perr != nil {
		return nil, fmt.Errorf("jfr print %s: %w", path, perr)
	}
	return rec, nil
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// limitedBuffer keeps the first max bytes written to it and drops the rest.
type limitedBuffer struct {
	buf *bytes.Buffer
	max int
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if room := l.max - l.buf.Len(); room > 0 {
		l.buf.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}
