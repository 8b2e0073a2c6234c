package evidence

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/google/pprof/profile"
	"github.com/perfdoctor/perfdoctor/formats/perfscript"
)

// pickPerfEvent returns the profile of the named event among those of one
// perf script file, or, with no name, the first (readPerfScript then
// ranks them). A name the file lacks is an error listing what it has.
func pickPerfEvent(ps []*profile.Profile, name string) (*profile.Profile, error) {
	if name == "" {
		return ps[0], nil
	}
	var have []string
	for _, p := range ps {
		ev := perfscript.Event(p)
		if ev == name {
			return p, nil
		}
		have = append(have, fmt.Sprintf("%s (%d samples)", ev, SampleCount(p)))
	}
	return nil, fmt.Errorf("perf event %q is not in this file; it has %s", name, strings.Join(have, ", "))
}

// perfNote says what perf script left out of a file's chosen event and
// what that means for reading it, or "".
func perfNote(p *profile.Profile) string {
	var notes []string
	if ev := perfscript.Event(p); ev != "" && !perfscript.IsCPUEvent(ev) {
		notes = append(notes, fmt.Sprintf("perf event %s is not CPU time, so the CPU rules do not read it", ev))
	}
	if slices.Contains(p.Comments, perfscript.NoTimeComment) {
		notes = append(notes, "no timestamps in the sample headers (perf script -F without time): the recording's duration is unknown, so nothing is read per second")
	}
	if slices.Contains(p.Comments, perfscript.NoPeriodComment) {
		notes = append(notes, "no periods in the sample headers: each sample counts one, so shares hold but not absolute time")
	}
	return strings.Join(notes, "; ")
}

// checkPerfEvent makes a perf event asked for (LoadOptions.PerfEvent) an
// error when no input held it, rather than a choice silently ignored.
func (e *loader) checkPerfEvent() error {
	want, perf := e.opt.PerfEvent, e.Profiles[Perf]
	switch {
	case want == "":
		return nil
	case perf == nil:
		return fmt.Errorf("perf event %q asked for, but the input holds no perf samples", want)
	case perfscript.Event(perf) == want:
		return nil
	}
	have := slices.Sorted(maps.Keys(e.PerfEvents))
	if len(have) == 0 {
		have = []string{perfscript.Event(perf)}
	}
	return fmt.Errorf("perf event %q is not in the input; it has %s", want, strings.Join(have, ", "))
}
