package jvm011_test

import (
	"testing"

	"github.com/perfdoctor/perfdoctor/rules/catalog"
	"github.com/perfdoctor/perfdoctor/rules/ruletest"
)

// Recorded bundles with their expectations (testdata/*/want.txt),
// diagnosed with the whole catalog.
func TestRecorded(t *testing.T) {
	ruletest.Run(t, "testdata", catalog.All())
}
