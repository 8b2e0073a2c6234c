package report

import (
	"fmt"
	"strings"

	"github.com/perfdoctor/perfdoctor/internal/human"
	"github.com/perfdoctor/perfdoctor/rules"
)

// refs numbers findings for people and finds them by ID, computed once per
// report: a root finding gets the next whole number, a symptom its cause's
// label and its own place under it ("2", "2.1", "2.2"). Rank puts every
// symptom right after its cause, so one pass suffices.
type refs struct {
	label []string
	at    map[string]int // finding ID -> index
}

func newRefs(fs []rules.Finding) refs {
	r := refs{label: make([]string, len(fs)), at: make(map[string]int, len(fs))}
	children := map[string]int{}
	roots := 0
	for i, f := range fs {
		r.at[f.ID] = i
		if c, ok := r.cause(f); ok {
			children[f.CausedBy]++
			r.label[i] = fmt.Sprintf("%s.%d", r.label[c], children[f.CausedBy])
			continue
		}
		roots++
		r.label[i] = fmt.Sprint(roots)
	}
	return r
}

// cause is the index of f's cause, when it is in the report.
func (r refs) cause(f rules.Finding) (int, bool) {
	c, ok := r.at[f.CausedBy]
	return c, ok && f.CausedBy != ""
}

// lines describes a finding's place among the others: the cause it is a
// symptom of, and the symptoms it explains, each named by label and ID.
func (r refs) lines(fs []rules.Finding, i int) (causedBy, explains string) {
	f := fs[i]
	if c, ok := r.cause(f); ok {
		causedBy = fmt.Sprintf("a symptom of #%s %s (%s)", r.label[c], fs[c].Class, fs[c].ID)
		if f.CauseReason != "" {
			causedBy += ": " + f.CauseReason
		}
	}
	var parts []string
	for _, id := range f.Explains {
		if j, ok := r.at[id]; ok {
			parts = append(parts, fmt.Sprintf("#%s %s (%s)", r.label[j], fs[j].Class, id))
		}
	}
	if len(parts) > 0 {
		explains = "explains " + strings.Join(parts, ", ")
		if total := withSymptoms(fs, r.at, f); total > 0 {
			explains += fmt.Sprintf("; with them the fix's est. gain is %s of cpu", human.Percent(total))
		}
	}
	return causedBy, explains
}
