package evidence

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/google/pprof/profile"
)

// Kinds of google/pprof's legacy profiles that no rule reads yet: they are
// loaded, listed and exported (perfdoctor export --kind) as pprof reads them.
const (
	// Threads is a thread profile (threadz): live threads by stack.
	Threads Kind = "threads"
	// ThreadCreate is Go's threadcreate profile: the stacks that created
	// OS threads, counted since the process started.
	ThreadCreate Kind = "threadcreate"
	// HeapGrowth is tcmalloc's heap growth profile (/pprof/growth): the
	// stacks at which the heap grew, and by how much.
	HeapGrowth Kind = "heap-growth"
)

// growthComment marks a heap growth profile, whose sample types
// (objects/space) are those of an in-use heap sample.
const growthComment = "legacy heap growth profile (@ growthz)"

// legacyHeapLabel reads the label of a legacy heap profile's header: "heap"
// (and heap_v2, heapz_v2, heapprofile), "growth(z)" or "fragmentation(z)".
var legacyHeapLabel = regexp.MustCompile(`\Aheap profile: *\d+: *\d+ *\[ *\d+: *\d+ *\] *@ *([a-z_]+)`)

// nameLegacyTypes gives the objects/space sample types of google/pprof's
// legacy heap profiles what they mean, from the header the writer printed:
// a heap sample without allocation counts (tcmalloc's /pprof/heap) holds
// objects and space in use, so it reads as inuse_objects/inuse_space; a
// growth profile is marked as one. It returns a note for the file, or "".
func nameLegacyTypes(p *profile.Profile, data []byte) string {
	if len(p.SampleType) != 2 || p.SampleType[0].Type != "objects" || p.SampleType[1].Type != "space" {
		return ""
	}
	m := legacyHeapLabel.FindSubmatch(data[:min(len(data), 256)])
	if m == nil {
		return ""
	}
	switch label := string(m[1]); {
	case strings.HasPrefix(label, "growth"):
		p.Comments = append(p.Comments, growthComment)
		return "a heap growth profile: where the heap grew, not what is in use; no rule reads it yet"
	case strings.HasPrefix(label, "heap"):
		p.SampleType[0].Type, p.SampleType[1].Type = "inuse_objects", "inuse_space"
		p.DefaultSampleType = "inuse_space"
		return "a heap sample of what is in use, without allocation counts: the in-use rules read it, the allocation rules have nothing to read"
	}
	return ""
}

// legacyKind files the legacy sample types classify does not: threads,
// Go's threadcreate and heap growth; ok is false for any other profile.
func legacyKind(p *profile.Profile) (Kind, bool) {
	switch {
	case slices.Contains(p.Comments, growthComment):
		return HeapGrowth, true
	case len(p.SampleType) == 1 && p.SampleType[0].Type == "thread":
		return Threads, true
	case len(p.SampleType) == 1 && p.SampleType[0].Type == "threadcreate":
		return ThreadCreate, true
	}
	return "", false
}

// threadCreateNote says how many of a threadcreate profile's threads have
// no creating stack: Go records none for the threads its runtime starts on
// its own (the scheduler's, the template thread's; Go issue 6104), so the
// profile counts OS threads but names few of their causes.
func threadCreateNote(p *profile.Profile) string {
	var all, bare int64
	for _, s := range p.Sample {
		all += s.Value[0]
		if !hasCode(s) {
			bare += s.Value[0]
		}
	}
	if bare == 0 {
		return ""
	}
	return fmt.Sprintf("%d of %d threads have no creating stack: Go's runtime records none for the threads it starts itself (Go issue 6104), so the profile counts OS threads but names few causes", bare, all)
}

// hasCode reports whether a sample has a frame at a real address or with
// a function.
func hasCode(s *profile.Sample) bool {
	for _, l := range s.Location {
		if l.Address != 0 && l.Address != ^uint64(0) {
			return true
		}
		for _, ln := range l.Line {
			if ln.Function != nil && ln.Function.Name != "" {
				return true
			}
		}
	}
	return false
}

// joinNotes joins a file's notes, skipping empty ones.
func joinNotes(notes ...string) string {
	var out []string
	for _, n := range notes {
		if n != "" {
			out = append(out, n)
		}
	}
	return strings.Join(out, "; ")
}
