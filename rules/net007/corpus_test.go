package net007

import (
	"path/filepath"
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
	// memcached read one key per get (memcaslap); a multi-get of ten
	// measured 3.24x the keys per second.
	"native-memcached-get-per-key": `top NET007 high "multi-key get" "pipelined"`,
	// The connections opened per request are caddy's own to its backend:
	// connection churn (NET001), not its clients' requests.
	"go-caddy-proxy-keepalive-off": `none`,
	// Every SET waits for its own fdatasync: the disk bounds it, not the
	// request's CPU (sync-disk-write).
	"native-redis-appendfsync-always": `none`,
	// nginx opens a FastCGI connection to PHP-FPM for every request
	// (fastcgi_keep_alive is off by default): 53% of PHP-FPM's CPU is that
	// fixed cost, real, but PHP-FPM used 0.064 of 2 cores, so its fix gives
	// back 0.050 cores, at weighCores' line (the first recording, at 0.055
	// cores, fell under it). The children's queue is the cause and, the
	// process being wait-bound, ranks first in the catalog (POOL001).
	"native-php-fpm-max-children": `fires NET007 "connection per request"`,
}

func TestCorpus(t *testing.T) {
	ruletest.Corpus(t, ruletest.CorpusCheck{Root: filepath.Join("..", "..", "corpus"), Rules: []*rules.Rule{Rule},
		Class: Rule.Class, Want: corpusWant, EveryFixedQuiet: false})
}
