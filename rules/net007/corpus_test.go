package net007

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/perfdoctor/perfdoctor/rules"
	"github.com/perfdoctor/perfdoctor/rules/ruletest"
)

// corpusWant is what NET007 must say of the real-server corpus's bundles
// (third-party servers, the truth measured by applying the fix). Every
// other scenario must get no NET007 finding; one whose truth names
// small-requests must be listed.
var corpusWant = map[string]string{
	// Tomcat closing every connection (maxKeepAliveRequests 1): the
	// connection's set-up and teardown are the request's fixed cost.
	"jvm-tomcat-keepalive-off": `top NET007 high "keep connections alive" "maxKeepAliveRequests"`,
	// One InfluxDB line per POST to VictoriaMetrics' /write.
	"go-victoriametrics-one-point-per-request": `top NET007 high "line protocol" "batch"`,
	// Ten GETs where one MGET would do.
	"native-redis-get-per-key": `top NET007 high "MGET" "pipeline"`,
	// The connections opened per request are caddy's own to its backend:
	// connection churn (NET001), not its clients' requests.
	"go-caddy-proxy-keepalive-off": `none`,
	// Every SET waits for its own fdatasync: the disk bounds it, not the
	// request's CPU (sync-disk-write).
	"native-redis-appendfsync-always": `none`,
}

func TestCorpus(t *testing.T) {
	root := filepath.Join("..", "..", "corpus")
	files, err := filepath.Glob(filepath.Join(root, "*", "scenario.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no corpus scenarios under %s: %v", root, err)
	}
	for _, file := range files {
		dir := filepath.Dir(file)
		name := filepath.Base(dir)
		t.Run(name, func(t *testing.T) {
			if _, err := os.Stat(filepath.Join(dir, "bad")); errors.Is(err, fs.ErrNotExist) {
				t.Skip("not recorded yet")
			}
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
			ours := slices.Contains(sc.Truth.Classes, Rule.Class)
			want, listed := corpusWant[name]
			if !listed {
				if ours {
					t.Fatalf("its truth names %s: say in corpusWant what NET007 must report", Rule.Class)
				}
				want = "none"
			}
			exp, err := ruletest.Parse(strings.NewReader(want))
			if err != nil {
				t.Fatal(err)
			}
			_, res := ruletest.Diagnose(t, filepath.Join(dir, "bad"), []*rules.Rule{Rule})
			for _, v := range ruletest.Violations(res, exp) {
				t.Error(v)
			}
			// The bundle after the fix, where one was kept and the fix was
			// batching, must be quiet (a fix for another class, such as
			// redis's appendfsync, leaves the requests as small as they were).
			if _, err := os.Stat(filepath.Join(dir, "fixed")); err == nil && ours {
				if _, res := ruletest.Diagnose(t, filepath.Join(dir, "fixed"), []*rules.Rule{Rule}); len(res.Findings) != 0 {
					t.Errorf("fixed: %s", res.Findings[0].Summary)
				}
			}
		})
	}
}
