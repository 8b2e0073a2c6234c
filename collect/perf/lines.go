package perf

import (
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/perfdoctor/perfdoctor/collect/perf/srcline"
)

// lineSource names the source lines of a recording's user-space frames
// from the DWARF line tables of their objects (srcline), in place of perf
// script -F srcline, which asks addr2line about every frame: 3.4 to 5.4 s
// of perf script for a 3 s recording of PostgreSQL here, 0.3 s without
// it. It gives what perf's srcline gave: the line table's file (its base
// name, as perf prints it) and line for frames whose object or its
// separate debug file carries line tables; nothing for kernel, JIT and
// stripped frames. Lines stop, the stacks kept, once the budget is spent.
type lineSource struct {
	r        srcline.Resolver
	deadline time.Time
	spent    bool
	log      *slog.Logger
	// paths is the file each process's object is read through (in the
	// process's mount namespace); byFile the first such path of each
	// file, so an object mapped by many processes is read once.
	paths  map[procObject]string
	byFile map[fileID]string
	frames int
	lines  int
}

type procObject struct {
	pid int64
	dso string
}

type fileID struct{ dev, ino uint64 }

func newLineSource(budget time.Duration, log *slog.Logger) *lineSource {
	return &lineSource{deadline: time.Now().Add(budget), log: log, paths: map[procObject]string{}, byFile: map[fileID]string{}}
}

// line is perfscript.Options.SourceLine.
func (s *lineSource) line(pid int64, dso string, addr uint64) (string, int64, bool) {
	if s.spent || !strings.HasPrefix(dso, "/") || strings.HasPrefix(dso, "/tmp/perf-") || strings.HasSuffix(dso, " (deleted)") {
		return "", 0, false
	}
	if time.Now().After(s.deadline) {
		s.spent = true
		s.log.Warn("source lines took too long; the remaining frames have none", "frames", s.frames, "with lines", s.lines)
		return "", 0, false
	}
	s.frames++
	path := s.path(pid, dso)
	l, ok := s.r.Lookup(path, addr)
	if !ok {
		return "", 0, false
	}
	s.lines++
	return filepath.Base(l.File), int64(l.Line), true
}

// path is the file to read dso through for process pid: under
// /proc/PID/root, where the process (in a container, say) sees it, while
// the process lives; the path itself otherwise.
func (s *lineSource) path(pid int64, dso string) string {
	k := procObject{pid, dso}
	if p, ok := s.paths[k]; ok {
		return p
	}
	p := dso
	if pid > 0 {
		inNS := fmt.Sprintf("/proc/%d/root%s", pid, dso)
		var st syscall.Stat_t
		if err := syscall.Stat(inNS, &st); err == nil {
			id := fileID{uint64(st.Dev), st.Ino}
			if first, ok := s.byFile[id]; ok {
				p = first
			} else {
				s.byFile[id] = inNS
				p = inNS
			}
		}
	}
	s.paths[k] = p
	return p
}

// report logs what the lines cost and which objects had none.
func (s *lineSource) report(start time.Time) {
	var none []string
	seen := map[string]bool{}
	for _, p := range s.paths {
		if !seen[p] {
			seen[p] = true
			if err := s.r.Err(p); err != nil {
				none = append(none, err.Error())
			}
		}
	}
	s.log.Debug("source lines from DWARF", "frames", s.frames, "with lines", s.lines, "took", time.Since(start), "objects without", none)
}
