// Package catalog lists every rule perfdoctor runs. A test checks that each
// rule package under rules/ appears here exactly once.
package catalog

import (
	"strings"

	"github.com/perfdoctor/perfdoctor/rules"
	"github.com/perfdoctor/perfdoctor/rules/connchurn"
	"github.com/perfdoctor/perfdoctor/rules/gcpressure"
	"github.com/perfdoctor/perfdoctor/rules/hotfunction"
	"github.com/perfdoctor/perfdoctor/rules/scheduler"
)

// All returns the catalog in ID order.
func All() []*rules.Rule {
	return []*rules.Rule{
		hotfunction.Rule,
		gcpressure.Rule,
		connchurn.Rule,
		scheduler.Rule,
	}
}

// Lookup finds a rule by ID (case-insensitive) or class slug.
func Lookup(key string) *rules.Rule {
	for _, r := range All() {
		if strings.EqualFold(r.ID, key) || r.Class == key {
			return r
		}
	}
	return nil
}
