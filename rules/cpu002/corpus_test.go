package cpu002

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/perfdoctor/perfdoctor/rules"
	"github.com/perfdoctor/perfdoctor/rules/ruletest"
)

// corpusCases are what CPU002 must say of the real-server corpus's bundles
// (third-party servers, each with its truth measured by applying the fix).
// A scenario not listed must get no CPU002 finding, unless its truth names
// redone work: then it must be listed here.
var corpusCases = map[string]string{
	// Every push gathers, sorts and checks the whole store; the call is the
	// pushgateway's own, so the fix names it and the setting that turns
	// the check off (the program is a Debian package: not the user's code).
	"go-pushgateway-consistency-check": `count 1
top CPU002 high "DiskMetricStore).checkWriteRequest" "Gatherers.Gather" "--push.disable-consistency-check" "not yours to edit"`,
	// Every lookup scans the users table: DB001's (the index), not this
	// rule's a second time.
	"jvm-h2-missing-index": `none`,
	// Compression of static files per request is compression-level's
	// (LIB004 prescribes precompressing): nothing here.
	"go-caddy-encode-gzip-9":    `none`,
	"jvm-jetty-gzip-level-9":    `none`,
	"native-nginx-gzip-level-9": `none`,
	// PostgreSQL scanning the users table per lookup: DB001's.
	"native-postgresql-missing-index": `none`,
	// A cache turned off by a flag: the configuration is the cause, and
	// the work it redoes is the query engine's ordinary work, no family's.
	"go-victoriametrics-cache-disabled": `none`,
	// No cache in the Corefile: each query is forwarded upstream again, a
	// configuration (CFG001's and the wait's), with no library work redone.
	"go-coredns-forward-no-cache": `none`,
}

func TestCorpus(t *testing.T) {
	root := filepath.Join("..", "..", "corpus")
	dirs, err := filepath.Glob(filepath.Join(root, "*", "scenario.json"))
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no corpus scenarios under %s: %v", root, err)
	}
	for _, file := range dirs {
		name := filepath.Base(filepath.Dir(file))
		t.Run(name, func(t *testing.T) {
			want, listed := corpusCases[name]
			if !listed {
				var sc struct {
					Truth struct {
						Classes []string `json:"classes"`
					} `json:"truth"`
				}
				data, err := os.ReadFile(file)
				if err != nil {
					t.Fatal(err)
				}
				if err := json.Unmarshal(data, &sc); err != nil {
					t.Fatalf("%s: %v", file, err)
				}
				if slices.Contains(sc.Truth.Classes, Rule.Class) {
					t.Fatalf("its truth names %s: say in corpusCases what CPU002 must report", Rule.Class)
				}
				want = "none"
			}
			exp, err := ruletest.Parse(strings.NewReader(want))
			if err != nil {
				t.Fatal(err)
			}
			_, res := ruletest.Diagnose(t, filepath.Join(root, name, "bad"), []*rules.Rule{Rule})
			for _, v := range ruletest.Violations(res, exp) {
				t.Error(v)
			}
			// A scenario's fixed bundle, where there is one, does the work
			// as the fix says: nothing redone.
			if _, err := os.Stat(filepath.Join(root, name, "fixed")); err == nil {
				_, res := ruletest.Diagnose(t, filepath.Join(root, name, "fixed"), []*rules.Rule{Rule})
				if len(res.Findings) != 0 {
					t.Errorf("fixed: %s", res.Findings[0].Summary)
				}
			}
		})
	}
}
