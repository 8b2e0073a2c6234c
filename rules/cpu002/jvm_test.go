package cpu002

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/facts"
	"github.com/perfdoctor/perfdoctor/rules"
)

// The JVM twin of the fresh kdf service (testdata/jvm/Login.java, recorded
// by testdata/jvm/record.sh under JFR's profile settings): PBKDF2 through
// SecretKeyFactory for every request is named, with the program's frame
// that makes the call; remembering verified credentials is silent.
func TestJVMPasswordHashing(t *testing.T) {
	for _, tc := range []struct {
		fixture string
		fires   bool
	}{
		{"login-bad-jdk17", true},
		{"login-bad-jdk25", true},
		{"login-fixed-jdk17", false},
	} {
		t.Run(tc.fixture, func(t *testing.T) {
			ev, err := evidence.Load(context.Background(), evidence.LoadOptions{}, filepath.Join("testdata", "jvm", tc.fixture+".jfr"))
			if err != nil {
				t.Fatal(err)
			}
			fs := rules.Run(facts.New(ev), []*rules.Rule{Rule}).Findings
			if !tc.fires {
				if len(fs) != 0 {
					t.Errorf("fixed: %s", fs[0].Summary)
				}
				return
			}
			if len(fs) != 1 {
				t.Fatalf("want one finding, got %+v", fs)
			}
			f := fs[0]
			for _, w := range []string{"Password hashing", "Login.hash -> SecretKeyFactory.generateSecret", "Login.hash (Login.java:", "remember the verified ones"} {
				if !strings.Contains(f.Summary+"\n"+f.Fix, w) {
					t.Errorf("%q missing from\n%s\n%s", w, f.Summary, f.Fix)
				}
			}
			if f.Severity != rules.High {
				t.Errorf("severity %s, impact %.2f", f.Severity, f.Impact)
			}
			t.Logf("%s (impact %.2f)", f.Summary, f.Impact)
		})
	}
}
