package rules

import (
	"fmt"
	"slices"

	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/facts"
)

// Advise picks the prescription for a cost whose code is at f, given
// whose code is whose (facts.Owners): codeFix when
// the user can edit that code (or ownership is unknown), else configFix, the
// configuration or choice open to a user of a dependency or of a
// third-party program, prefixed with whose code it is. The fact records the
// reading; editable says whether codeFix was chosen, so a rule drops its
// code example when the user cannot make that edit.
func Advise(o *facts.CodeOwners, f evidence.Frame, codeFix, configFix string) (fix string, whose Fact, editable bool) {
	editable, whose, notYours := userEdits(o, f)
	if !editable {
		return notYours + " " + configFix, whose, false
	}
	return codeFix, whose, true
}

// userEdits says whether the code at f is the user's to edit, with the fact
// recording whose it is and, when it is not, the sentence that says so.
func userEdits(o *facts.CodeOwners, f evidence.Frame) (bool, Fact, string) {
	w := o.Of(f)
	site := ShortFunc(f.Func)
	switch {
	case w.Owner == facts.OwnerDependency:
		return false, Text("whose code", fmt.Sprintf("%s: dependency %s (%s)", site, w.Module, w.Why)),
			fmt.Sprintf("The cost is in %s, a dependency (%s): its code is not yours to edit.", w.Module, w.Why)
	case o.Program != "" && w.Owner != facts.OwnerStdlib:
		return false, Text("whose code", fmt.Sprintf("%s: a third-party program (%s)", site, o.Program)),
			fmt.Sprintf("The cost is in code shipped with the program, and %s: its code is not yours to edit.", o.Program)
	case w.Owner == facts.OwnerMain:
		return true, Text("whose code", fmt.Sprintf("%s: the main module (%s)", site, w.Why)), ""
	}
	return true, Text("whose code", site+": not known (no build info, and the file paths do not tell)"), ""
}

// markForeignCode qualifies the findings whose rules did not ask whose code
// they name: where the first location is in a dependency or a packaged
// program, the code changes prescribed are its maintainers', and a caveat
// says what is left to the user.
func markForeignCode(owners *facts.CodeOwners, findings []Finding) {
	for i := range findings {
		f := &findings[i]
		if len(f.Locations) == 0 || slices.ContainsFunc(f.Evidence, func(x Fact) bool { return x.Name == "whose code" }) {
			continue
		}
		loc := f.Locations[0]
		editable, whose, notYours := userEdits(owners, evidence.Frame{Func: loc.Function, File: loc.File, Line: loc.Line})
		if editable {
			continue
		}
		f.Evidence = append(f.Evidence, whose)
		f.Caveats = append(f.Caveats, notYours+" The code changes above are for its maintainers; yours are its configuration, "+
			"the settings of its runtime, and how much work you send it.")
	}
}
