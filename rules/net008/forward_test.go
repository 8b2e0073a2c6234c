package net008

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/pprof/profile"

	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/facts"
	"github.com/perfdoctor/perfdoctor/internal/testprof"
	"github.com/perfdoctor/perfdoctor/rules"
	"github.com/perfdoctor/perfdoctor/rules/ruletest"
)

func run(stacks ...testprof.Stack) rules.Result {
	ev := testprof.Evidence(map[evidence.Kind]*profile.Profile{evidence.CPU: testprof.Build(stacks...)})
	return rules.Run(facts.New(ev), []*rules.Rule{Rule})
}

func stack(v int64, funcs ...string) testprof.Stack { return testprof.Stack{Value: v, Funcs: funcs} }

// A Go resolver of one's own on miekg/dns: the handler forwards each
// question with Client.Exchange and writes the reply.
const (
	handler  = "example.com/resolver.(*handler).ServeDNS"
	served   = "github.com/miekg/dns.(*Server).serveDNS"
	packet   = "github.com/miekg/dns.(*Server).serveUDPPacket"
	exchg    = "github.com/miekg/dns.(*Client).ExchangeContext"
	connRead = "github.com/miekg/dns.(*Conn).ReadMsg"
	write    = "github.com/miekg/dns.(*response).WriteMsg"
)

func TestFiresOnForwardPerQuery(t *testing.T) {
	res := run(
		stack(400, "syscall.write", connRead, exchg, handler, served, packet),
		stack(100, "example.com/resolver.(*handler).rewrite", handler, served, packet),
		stack(250, "syscall.sendmsg", write, handler, served, packet),
		stack(250, "github.com/miekg/dns.(*Msg).Unpack", served, packet),
	)
	if len(res.Findings) != 1 {
		t.Fatalf("want one finding, got %+v", res.Findings)
	}
	f := res.Findings[0]
	// The handler's subtree outside the reply: 50%; the exchange 40%.
	if f.Severity != rules.High || f.Impact < 0.49 || f.Impact > 0.51 || f.ImpactRange[0] < 0.39 || f.ImpactRange[0] > 0.41 {
		t.Errorf("severity %v impact %.3f range %v", f.Severity, f.Impact, f.ImpactRange)
	}
	// The range's top: the upstream on these cores doing the kept half again.
	if top := f.ImpactRange[1]; top < 0.66 || top > 0.67 {
		t.Errorf("range top %.3f, want 1/(2-0.5)", top)
	}
	if !f.RemovesWork {
		t.Error("a cache hit forwards nothing: a floor and no top")
	}
	if f.Locations[0].Function != handler || !strings.Contains(f.Fix, "singleflight") {
		t.Errorf("locations %+v fix %q", f.Locations, f.Fix)
	}
	if !strings.Contains(f.Summary, "forwarded") || !strings.Contains(f.Summary, "cache") {
		t.Errorf("summary %q", f.Summary)
	}
}

// With a cache in front, the exchanges that remain fill its misses.
func TestSilentUnderCache(t *testing.T) {
	cached := "example.com/resolver.(*cachingHandler).ServeDNS"
	res := run(
		stack(400, "syscall.write", connRead, exchg, handler, cached, served, packet),
		stack(600, "syscall.sendmsg", write, cached, served, packet),
	)
	if len(res.Findings) != 0 {
		t.Fatalf("exchanges under a cache reported: %+v", res.Findings[0])
	}
}

// CoreDNS with the cache plugin in the server block (the corpus scenario's
// fix, as its stacks run): the forwards that remain are the cache's misses.
func TestSilentOnCoreDNSWithCache(t *testing.T) {
	const (
		serveDNS = "github.com/coredns/coredns/core/dnsserver.(*Server).ServeDNS"
		cachePl  = "github.com/coredns/coredns/plugin/cache.(*Cache).ServeDNS"
		next     = "github.com/coredns/coredns/plugin.NextOrFailure"
		fwd      = "github.com/coredns/coredns/plugin/forward.(*Forward).ServeDNS"
		connect  = "github.com/coredns/coredns/plugin/pkg/proxy.(*Proxy).Connect"
		scrub    = "github.com/coredns/coredns/request.(*ScrubWriter).WriteMsg"
	)
	res := run(
		stack(300, "syscall.write", "github.com/miekg/dns.(*Conn).Write", connect, fwd, next, cachePl, serveDNS, served, packet),
		stack(500, "syscall.sendmsg", write, scrub, cachePl, serveDNS, served, packet),
		stack(200, "github.com/miekg/dns.(*Msg).Unpack", served, packet),
	)
	if len(res.Findings) != 0 {
		t.Fatalf("CoreDNS with its cache reported: %+v", res.Findings[0])
	}
	// The same stacks without the cache plugin: forward.ServeDNS owns the
	// exchange, and the fix names the cache plugin.
	res = run(
		stack(300, "syscall.write", "github.com/miekg/dns.(*Conn).Write", connect, fwd, serveDNS, served, packet),
		stack(500, "syscall.sendmsg", write, scrub, fwd, serveDNS, served, packet),
		stack(200, "github.com/miekg/dns.(*Msg).Unpack", served, packet),
	)
	if len(res.Findings) != 1 || !strings.Contains(res.Findings[0].Fix, "cache plugin") || res.Findings[0].Impact < 0.29 || res.Findings[0].Impact > 0.31 {
		t.Fatalf("CoreDNS without a cache: %+v", res.Findings)
	}
}

// Exchanges outside a query's handling (a health check's goroutine) are not
// forwarding, nor is a forwarder that does it for a sliver of its CPU.
func TestSilentOffThePathAndBelowThreshold(t *testing.T) {
	res := run(
		stack(400, "syscall.write", connRead, exchg, "github.com/coredns/coredns/plugin/pkg/proxy.(*Proxy).Healthcheck"),
		stack(50, "syscall.write", connRead, exchg, handler, served, packet),
		stack(550, "syscall.sendmsg", write, "example.com/resolver.(*zone).ServeDNS", served, packet),
	)
	if len(res.Findings) != 0 {
		t.Fatalf("reported: %+v", res.Findings[0])
	}
}

// HTTP reverse proxies forward by design and their responses' cacheability
// is not in the bundle: the rule reads DNS exchanges only.
func TestSilentOnHTTPProxy(t *testing.T) {
	res := run(
		stack(600, "net/http.(*persistConn).roundTrip", "net/http.(*Transport).roundTrip", "net/http/httputil.(*ReverseProxy).ServeHTTP", "net/http.serverHandler.ServeHTTP"),
		stack(400, "net/http.(*response).Write", "net/http.serverHandler.ServeHTTP"),
	)
	if len(res.Findings) != 0 {
		t.Fatalf("reported: %+v", res.Findings[0])
	}
}

// corpusCases are what NET008 must say of the real-server corpus. A
// scenario not listed must get no NET008 finding unless its truth names
// redone work: then it is listed.
var corpusCases = map[string]string{
	// CoreDNS forwarding without the cache plugin: forward.ServeDNS outside
	// the reply is 48% of CPU; the fix names the Corefile from -conf.
	"go-coredns-forward-no-cache": `count 1
top NET008 high "forward.(*Forward).ServeDNS" "cache plugin" "Corefile.34993, -conf" "166.8k queries"`,
	// Redone work of other kinds, other rules': no DNS exchange.
	"go-pushgateway-consistency-check":  `none`,
	"jvm-h2-missing-index":              `none`,
	"go-caddy-encode-gzip-9":            `none`,
	"jvm-jetty-gzip-level-9":            `none`,
	"native-nginx-gzip-level-9":         `none`,
	"native-postgresql-missing-index":   `none`,
	"go-victoriametrics-cache-disabled": `none`,
	"native-mariadb-missing-index":      `none`,
}

func TestCorpus(t *testing.T) {
	ruletest.Corpus(t, ruletest.CorpusCheck{Root: filepath.Join("..", "..", "corpus"), Rules: []*rules.Rule{Rule},
		Class: Rule.Class, Want: corpusCases, EveryFixedQuiet: true})
}
