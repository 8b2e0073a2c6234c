package report

import (
	"fmt"
	"strings"

	"github.com/perfdoctor/perfdoctor/rules"
)

// labels numbers findings for people, in rank order: a root finding gets
// the next whole number, a symptom its cause's label and its own place
// under it ("2", "2.1", "2.2"). Rank puts every symptom right after its
// cause, so one pass suffices.
func labels(fs []rules.Finding) []string {
	out := make([]string, len(fs))
	byID := map[string]int{}
	children := map[string]int{}
	roots := 0
	for i, f := range fs {
		byID[f.ID] = i
		if c, ok := byID[f.CausedBy]; ok && f.CausedBy != "" {
			children[f.CausedBy]++
			out[i] = fmt.Sprintf("%s.%d", out[c], children[f.CausedBy])
			continue
		}
		roots++
		out[i] = fmt.Sprint(roots)
	}
	return out
}

// linkLines describes a finding's place among the others: the cause it is
// a symptom of, and the symptoms it explains, each named by label and ID.
func linkLines(fs []rules.Finding, label []string, i int) (causedBy, explains string) {
	at := map[string]int{}
	for j, f := range fs {
		at[f.ID] = j
	}
	f := fs[i]
	if c, ok := at[f.CausedBy]; ok && f.CausedBy != "" {
		causedBy = fmt.Sprintf("a symptom of #%s %s (%s)", label[c], fs[c].Class, fs[c].ID)
		if f.CauseReason != "" {
			causedBy += ": " + f.CauseReason
		}
	}
	var parts []string
	for _, id := range f.Explains {
		if j, ok := at[id]; ok {
			parts = append(parts, fmt.Sprintf("#%s %s (%s)", label[j], fs[j].Class, id))
		}
	}
	if len(parts) > 0 {
		explains = "explains " + strings.Join(parts, ", ")
	}
	return causedBy, explains
}
