// Package net008 names a DNS server that forwards every query to an
// upstream with no cache in front of the exchange (finding class
// redone-work): each answer is fetched again though the protocol lets it be
// kept for its TTL.
package net008

import (
	"fmt"
	"strings"

	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/facts"
	"github.com/perfdoctor/perfdoctor/internal/human"
	"github.com/perfdoctor/perfdoctor/rules"
)

// Rule is NET008.
var Rule = &rules.Rule{
	ID:    "NET008",
	Class: "redone-work",
	Doc: rules.Doc{
		Title: "A DNS forwarder sends every query upstream: no cache keeps the answers",
		Text: `A DNS answer carries its own permission to be reused: every record has a TTL,
and a resolver that keeps answers for it serves a repeated name from memory.
A forwarder with no cache in front of its upstream exchange pays, for every
query, what a cache pays once per name and TTL: a fresh random query ID, a
write to the upstream socket, a wait for the reply, reading and parsing it,
and the upstream's own work to answer again. What stays after the fix is the
server's part of a query: receiving it, parsing it, finding the answer and
writing it to the client. CoreDNS forwards with the forward plugin and
caches only when the server block has the cache plugin; AdGuard's dnsproxy
caches only with --cache; a Go program built on miekg/dns caches nothing
unless its handler does.`,
		Evidence: `The CPU profile. A sample is a forwarded query when it is in a DNS client
exchange (miekg/dns's Client.Exchange, its client Conn's WriteMsg and
ReadMsg, the random query ID; CoreDNS's proxy.Connect) under a DNS server's
request handler (miekg/dns's Server.serve*: a query being answered, not a
health check on its own goroutine), with no function named for a cache
rootward of the exchange: a forward under a cache is the cache filling a
miss, which is the cache working. The fix removes, besides the exchange,
the rest of the forwarding frame's subtree (the program's frame rootward of
the exchange: CoreDNS's forward.(*Forward).ServeDNS with its matching and
metrics), but not the answer's delivery to the client (miekg/dns's response
writer, CoreDNS's ScrubWriter), which a cache hit still does.

Measured: CoreDNS 1.15.0 forwarding without the cache plugin (corpus
go-coredns-forward-no-cache, 32 clients asking one name, 8.3k queries/s on
the two cores shared with its upstream and the load generator): the exchange
45% of CPU (proxy.Connect; the query ID from crypto/rand 10% of it), the
forwarding frame's subtree outside the reply 48%, the reply 23%; with
cache 30 it served 3.26x [2.48, 4.28] the queries. No other bundle of the
corpus or the casebook has a DNS client frame (0%: the healthy servers and
the other problems, HTTP proxies among them); with a cache in the server
block the exchanges run under the cache's frame and are not counted. So
the bar is not set by a healthy server's share but by the least gain worth
a change of configuration: reports from 10% of CPU, where a cache gives
1.11x or more. Severity follows the share: high from 20%, medium from 8%.

The gain. The point is the forwarding frame's subtree outside the reply, f
(a hit removes all of it); the range runs from the exchange's frames alone
to the case where the upstream shares the machine's cores: the profile does
not say where the upstream runs (the bundle records TCP peers, not UDP
ones), and an upstream answering from memory spends per query about what
this server keeps, 1 − f of its CPU per query, so the cores' work per query
falls from 1 + (1 − f) to 1 − f, a share of 1/(2 − f) removed. On CoreDNS:
f 48% gives 2.0x at the point (with the collector's and scheduler's drag),
1.8x to 3.3x by the range, and 3.26x was measured with the upstream on the
same cores. One scenario: the top's model (the upstream doing this server's
kept work again) agrees with it, which is a check of one, not a fit.

HTTP reverse proxies are not judged: whether an HTTP response may be kept is
in its headers (Cache-Control, Expires), which the bundle does not record,
and forwarding is then a proxy's job (its costs are connection-churn's and
small-requests').`,
		Fix: `Put a cache in front of the forwarding. CoreDNS: add the cache plugin to the
server block (cache 30 keeps each answer for its TTL, at most 30 s, and
negative answers too; CoreDNS runs cache before forward whatever the order
in the block). dnsproxy: --cache (and --cache-size). Code of your own on
miekg/dns: keep answers by question (name, type, class, the DO bit) for the
smallest TTL in the answer, capped, negative answers for the SOA's minimum
(RFC 2308), and let concurrent identical questions share one exchange
(singleflight).`,
		Before:  before,
		After:   after,
		Caveats: caveats,
		Since:   "0.4",
		Refs:    []string{"https://coredns.io/plugins/cache/", "https://www.rfc-editor.org/rfc/rfc2308"},
	},
	Needs: []rules.Input{rules.CPU},
	Uses:  []rules.Input{rules.System},
	Facts: []facts.Key{facts.CPUStacks, facts.Configuration, facts.Owners},
	Check: check,
}

const (
	before = `. {
    forward . 10.0.0.53
}`
	after = `. {
    cache 30
    forward . 10.0.0.53
}`
	caveats = `A cache saves only the questions that repeat within their TTL: a forwarder in
front of a caching resolver on the same host, asked names that rarely repeat,
forwards by design. A cache serves a changed record until its TTL (or the
cap) runs out: cap it where records change faster than their TTL says.`
)

// Thresholds, with the measurements behind them in Doc.Evidence.
const (
	// minShare is the forwarding a report needs: from it a cache gives
	// 1.11x or more; every bundle but CoreDNS's holds 0%, CoreDNS without
	// a cache 48%.
	minShare = 0.10
)

// exchange is a DNS query sent to an upstream and its reply read: miekg/dns's
// client (Client.Exchange and the client Conn's reads and writes, the
// random query ID a new question gets) and CoreDNS's proxy, which drives
// that client (plugin/pkg/proxy since 1.11, plugin/forward's Proxy before).
var exchange = evidence.FuncPrefix(
	"github.com/miekg/dns.(*Client).Exchange", "github.com/miekg/dns.(*Client).exchange",
	"github.com/miekg/dns.Exchange", "github.com/miekg/dns.(*Conn).", "github.com/miekg/dns.id",
	"github.com/coredns/coredns/plugin/pkg/proxy.(*Proxy).Connect",
	"github.com/coredns/coredns/plugin/forward.(*Proxy).Connect",
)

// serving is a DNS server answering a query: miekg/dns's packet and
// connection handlers, the root of every query's goroutine.
var serving = evidence.FuncPrefix("github.com/miekg/dns.(*Server).serve")

// reply is the answer's delivery to the client, which a cache hit still
// does: miekg/dns's response writer and CoreDNS's ScrubWriter over it.
var reply = evidence.FuncPrefix("github.com/miekg/dns.(*response).", "github.com/coredns/coredns/request.(*ScrubWriter).")

// cache is a function named for a cache or for caching: CoreDNS's cache
// plugin, dnsproxy's cache, blocky's CachingResolver, a program's own.
// Rootward of an exchange it means the exchange fills a miss.
func cache(fn string) bool {
	fn = strings.ToLower(fn)
	return strings.Contains(fn, "cache") || strings.Contains(fn, "caching")
}

// knownForwarders are programs whose cache is a setting, from their
// documentation: the forwarding frame's prefix and the setting.
var knownForwarders = []struct{ prefix, program, setting, example string }{
	{"github.com/coredns/coredns/", "CoreDNS",
		"add the cache plugin to the server block%s (cache 30: each answer kept for its TTL, at most 30 s, negative answers too; CoreDNS runs cache before forward whatever the order in the block)",
		before + "\n->\n" + after},
	{"github.com/AdguardTeam/dnsproxy/", "dnsproxy",
		"start it with --cache (off by default), and --cache-size sized to the names asked%s",
		"dnsproxy -l 127.0.0.1 -u 10.0.0.53   ->   dnsproxy -l 127.0.0.1 -u 10.0.0.53 --cache"},
}

func check(pass *rules.Pass) error {
	if !pass.EnoughCPU() {
		return nil
	}
	cpu := facts.Get(pass.Facts, facts.CPUStacks)
	m := classify(cpu)
	exch := cpu.ShareWhere(m.forwarded)
	if exch == 0 {
		return nil
	}
	// The program's frame that forwards: the first application frame
	// rootward of the exchange, by CPU.
	callers := cpu.TopSites(3, func(s evidence.Sample) *evidence.Frame {
		if !m.forwarded(s) {
			return nil
		}
		return m.caller(s)
	})
	removed := m.forwarded
	if len(callers) > 0 {
		removed = m.under(callers[0].Func)
	}
	share := max(cpu.ShareWhere(removed), exch)
	if share < minShare {
		return nil
	}
	kept := cpu.ShareWhere(func(s evidence.Sample) bool { return m.answering(s) && !removed(s) })

	where := "the DNS client's exchange"
	if len(callers) > 0 {
		where = rules.ShortFunc(callers[0].Func)
	}
	f := rules.Finding{
		Severity: rules.SeverityFor(share),
		Impact:   share,
		// From the exchange alone to the upstream's work too, when it
		// shares these cores and answers from memory as this server
		// would (Doc.Evidence).
		ImpactRange: &[2]float64{min(exch, share), max(share, 1/(2-share))},
		RemovesWork: true, // a cache hit forwards nothing
		Resource:    "cpu",
		ImpactBasis: "share of CPU samples in the forwarding frame's subtree outside the answer's delivery to the client: a cache hit removes all of it; " +
			"at least the exchange's frames, at most also the upstream's answer when it shares these cores and spends what this server keeps per query (1/(2 − share))",
		Summary: fmt.Sprintf("Every query is forwarded upstream with no cache in front: %s of CPU fetches answers again under %s", human.Percent(share), where),
		Evidence: []rules.Fact{
			rules.Share("forwarding outside the reply, share of CPU", share),
			rules.Share("the upstream exchange (write, wait, read, query ID), share of CPU", exch),
			rules.Share("answering the client (what a cache hit keeps), share of CPU", kept),
			rules.Text("cache on the path", "none: no function named for a cache calls the exchange"),
		},
		Locations: append(rules.Locations(callers, "the program's forwarding"), rules.Locations(cpu.TopSites(3, m.outermost), "the exchange")...),
		Frames:    cpu.Matched(exchange, 12),
		Caveats:   []string{caveats},
	}
	if cached := cpu.ShareWhere(m.filling); cached > 0 {
		f.Evidence = append(f.Evidence, rules.Share("exchanges under a cache (misses being filled), share of CPU", cached))
	}
	if l := pass.Evidence.Load; l != nil && l.Requests > 0 && strings.HasPrefix(l.URL, "udp://") && l.BodyBytes > 0 {
		f.Evidence = append(f.Evidence, rules.Text("load", fmt.Sprintf("%s queries, each the same %d-byte datagram: after the first, every answer was one a cache holds",
			human.Number(float64(l.Requests)), l.BodyBytes)))
	} else {
		f.Caveats = append(f.Caveats, "The load is not known to repeat its questions: the gain assumes names are asked again within their TTL.")
	}
	codeFix := fmt.Sprintf("%s sends every question upstream: keep answers by question (name, type, class, the DO bit) for the smallest TTL in the answer, capped (30 s is common), negative answers for the SOA's minimum (RFC 2308), and let concurrent identical questions share one exchange (singleflight).", where)
	configFix := "Put a cache in front of the forwarding: look for the program's cache setting."
	if len(callers) > 0 {
		known := false
		for _, k := range knownForwarders {
			if strings.HasPrefix(callers[0].Func, k.prefix) {
				configFix = fmt.Sprintf("%s: %s.", k.program, fmt.Sprintf(k.setting, configPlace(facts.Get(pass.Facts, facts.Configuration), k.program)))
				f.Example, known = k.example, true
			}
		}
		var whose rules.Fact
		var editable bool
		f.Fix, whose, editable = rules.Advise(facts.Get(pass.Facts, facts.Owners), callers[0].Frame, codeFix, configFix)
		f.Evidence = append(f.Evidence, whose)
		if known && editable {
			// A build of one's own of a known forwarder: its setting is
			// still the fix, not a change to its code.
			f.Fix = configFix
		}
	} else {
		f.Fix = codeFix
	}
	f.Fix += " Prove it with perfdoctor verify: the server with and without the cache, under the same load."
	// A program's cache setting is the cause's level when the code is not
	// the user's; the user's own handler is code.
	level := rules.LevelCode
	if f.Example != "" {
		level = rules.LevelConfig
	}
	f.Claim = &rules.Claim{Level: level, CPU: removed, Regrade: rules.SeverityFor}
	pass.Report(f)
	return nil
}

// configPlace names the file the setting goes in when the command line
// names it: CoreDNS's -conf.
func configPlace(cfg facts.Config, program string) string {
	if program != "CoreDNS" {
		return ""
	}
	s, ok := cfg.Last("conf")
	if !ok {
		return " of the Corefile"
	}
	path := s.Value
	if s.Alone {
		path = s.Next
	}
	if path == "" {
		return " of the Corefile"
	}
	return " of the Corefile (" + path + ", -conf)"
}

// matching reads each sample's forwarding.
type matching struct {
	st                         *evidence.Stacks
	exch, serve, deliver, cach []bool
}

func classify(st *evidence.Stacks) *matching {
	return &matching{st: st, exch: st.FrameHits(exchange), serve: st.FrameHits(serving), deliver: st.FrameHits(reply), cach: st.FrameHits(cache)}
}

// outer is the index in s.Frames (leaf first) of the outermost exchange
// frame, or -1.
func (m *matching) outer(s evidence.Sample) int {
	at := -1
	for i, id := range s.Frames {
		if m.exch[id] {
			at = i
		}
	}
	return at
}

func (m *matching) any(s evidence.Sample, from int, hit []bool) bool {
	for _, id := range s.Frames[from:] {
		if hit[id] {
			return true
		}
	}
	return false
}

// answering is a sample of the server answering a query.
func (m *matching) answering(s evidence.Sample) bool { return m.any(s, 0, m.serve) }

// forwarded is an exchange made for a query being answered with no cache
// rootward of it.
func (m *matching) forwarded(s evidence.Sample) bool {
	at := m.outer(s)
	return at >= 0 && m.any(s, at, m.serve) && !m.any(s, at, m.cach)
}

// filling is an exchange made for a query under a cache: a miss.
func (m *matching) filling(s evidence.Sample) bool {
	at := m.outer(s)
	return at >= 0 && m.any(s, at, m.serve) && m.any(s, at, m.cach)
}

// caller is the first application frame rootward of the exchange.
func (m *matching) caller(s evidence.Sample) *evidence.Frame {
	at := m.outer(s)
	for _, id := range s.Frames[at+1:] {
		if fn := m.st.Frames[id].Func; rules.IsApplication(fn) && !m.exch[id] {
			return &m.st.Frames[id]
		}
	}
	return nil
}

// outermost picks a forwarded sample's outermost exchange frame.
func (m *matching) outermost(s evidence.Sample) *evidence.Frame {
	if !m.forwarded(s) {
		return nil
	}
	return &m.st.Frames[s.Frames[m.outer(s)]]
}

// under selects the samples of queries being answered in fn's subtree, with
// no cache rootward of fn, outside the reply to the client: what a cache
// hit removes.
func (m *matching) under(fn string) func(evidence.Sample) bool {
	// Read once per frame, not once per frame of every sample: the
	// engine asks the claim of every sample again when it arbitrates.
	in := m.st.FrameHits(func(f string) bool { return f == fn })
	return func(s evidence.Sample) bool {
		at := -1
		for i, id := range s.Frames {
			if in[id] {
				at = i
			}
		}
		if at < 0 || !m.any(s, at, m.serve) || m.any(s, at, m.cach) {
			return false
		}
		return !m.any(s, 0, m.deliver)
	}
}
