//go:generate go run ./gen

package catalog

import (
	"strings"

	"github.com/perfdoctor/perfdoctor/rules"
)

// Lookup finds a rule by ID (case-insensitive) or class slug.
func Lookup(key string) *rules.Rule {
	for _, r := range All() {
		if strings.EqualFold(r.ID, key) || r.Class == key {
			return r
		}
	}
	return nil
}
