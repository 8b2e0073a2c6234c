package cpu002

import (
	"path/filepath"
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
	// MariaDB scanning the users table per lookup: DB001's too.
	"native-mariadb-missing-index": `none`,
	// A cache turned off by a flag: the configuration is the cause, and
	// the work it redoes is the query engine's ordinary work, no family's.
	"go-victoriametrics-cache-disabled": `none`,
	// No cache in the Corefile: each query is forwarded upstream again;
	// NET008 names it (a DNS exchange with no cache in front), with no
	// library work of CPU002's families redone.
	"go-coredns-forward-no-cache": `none`,
}

func TestCorpus(t *testing.T) {
	ruletest.Corpus(t, ruletest.CorpusCheck{Root: filepath.Join("..", "..", "corpus"), Rules: []*rules.Rule{Rule},
		Class: Rule.Class, Want: corpusCases, EveryFixedQuiet: true})
}
