package cfg001_test

import (
	"testing"

	"github.com/perfdoctor/perfdoctor/rules/catalog"
	"github.com/perfdoctor/perfdoctor/rules/ruletest"
)

// Services written for this rule, recorded by testdata/record.sh: the
// settings named where they are the cause, nothing where they are not.
func TestRecordedServices(t *testing.T) {
	ruletest.Run(t, "testdata", catalog.All())
}
