// Package net001 detects connections dialled and closed per request
// instead of reused (finding class connection-churn).
package net001

import (
	"fmt"

	"github.com/perfdoctor/perfdoctor/facts"

	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/internal/human"
	"github.com/perfdoctor/perfdoctor/rules"
)

// Rule is NET001.
var Rule = &rules.Rule{
	ID:    "NET001",
	Class: "connection-churn",
	Doc: rules.Doc{
		Title: "Connections are dialled and closed per request",
		Text: `Opening a socket costs several system calls (socket, setsockopt, connect,
epoll_ctl) and closing it more; a TCP dial adds a round trip and leaves a
TIME_WAIT entry behind. Done once per request or per packet, this dominates a
fast service's CPU and eventually exhausts ephemeral ports.`,
		Evidence: `CPU share of samples under the net package's dial path (net.Dial*,
(*Dialer).DialContext, internetSocket, (*netFD).connect) or under an outbound
connection's Close, excluding the HTTP server closing its own inbound
connections. The calling application frames are named. Reports from 3%.`,
		Fix: `Reuse connections. HTTP: one shared http.Client for the process, keep-alive
on, Transport.MaxIdleConnsPerHost sized to the concurrency (the default is 2),
and always drain and close response bodies. UDP: keep connected sockets, e.g.
a sync.Pool of *net.UDPConn per destination held in a sync.Map. Raw TCP: a
connection pool per destination.`,
		Before: `conn, _ := net.DialUDP("udp", nil, dst); conn.Write(b); conn.Close()   // per packet`,
		After:  `conn := pool.Get(dst); conn.Write(b); pool.Put(dst, conn)             // reused`,
		Caveats: `UDP: a client that reads replies and one that never does must not share a
destination's sockets, or replies cross between them.`,
		Since: "0.1",
		Refs:  []string{"https://pkg.go.dev/net/http#Transport"},
	},
	Needs: []rules.Input{rules.CPU},
	Facts: []facts.Key{facts.CPUStacks},
	Check: check,
}

var (
	dialFrames = evidence.FuncPrefix(
		"net.Dial", "net.(*Dialer).Dial", "net.(*sysDialer)", "net.internetSocket",
		"net.(*netFD).connect", "net.(*netFD).dial",
	)
	closeFrames = evidence.FuncPrefix("net.(*conn).Close", "net.(*netFD).Close")
	// inboundClose is the HTTP server closing its clients' connections: a
	// different problem (clients without keep-alive), not the service's dialling.
	inboundClose = evidence.FuncPrefix("net/http.(*conn).close", "net/http.(*conn).serve.func1", "net.(*TCPListener)")
	httpClient   = evidence.FuncPrefix("net/http.(*Transport)")
	udpDial      = evidence.FuncPrefix("net.DialUDP", "net.(*sysDialer).dialUDP")
)

const minShare = 0.03

func check(pass *rules.Pass) error {
	if !pass.EnoughCPU() {
		return nil
	}
	cpu := facts.Get(pass.Facts, facts.CPUStacks)
	dials, closes, inbound := cpu.Has(dialFrames), cpu.Has(closeFrames), cpu.Has(inboundClose)
	churn := func(s evidence.Sample) bool { return dials(s) || (closes(s) && !inbound(s)) }
	share := cpu.ShareWhere(churn)
	if share < minShare {
		return nil
	}
	dialShare := cpu.Share(dialFrames)
	kind, fix, example := "TCP", "Keep connections open and reuse them: a pool of connections per destination.", ""
	udp, viaHTTP := cpu.Has(udpDial), cpu.Has(httpClient)
	switch {
	case cpu.ShareWhere(func(s evidence.Sample) bool { return dials(s) && udp(s) }) > dialShare/2:
		kind = "UDP"
		fix = "Keep connected UDP sockets and reuse them: a sync.Pool of *net.UDPConn per destination, held in a sync.Map keyed by address."
		example = pass.Rule.Doc.After
	case cpu.ShareWhere(func(s evidence.Sample) bool { return dials(s) && viaHTTP(s) }) > dialShare/2:
		kind = "HTTP"
		fix = "Share one http.Client (one Transport) for the process, set Transport.MaxIdleConnsPerHost to the request concurrency (the default is 2), and always read response bodies to EOF and close them so connections return to the pool."
		example = "var client = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}} // one per process"
	}
	appFrame := cpu.First(rules.IsApplication)
	callers := cpu.TopSites(5, func(s evidence.Sample) *evidence.Frame {
		if !churn(s) {
			return nil
		}
		return appFrame(s)
	})
	f := rules.Finding{
		Severity:    rules.SeverityFor(share),
		Impact:      share,
		Resource:    "cpu",
		ImpactBasis: "share of CPU samples dialling or closing outbound connections; reuse removes nearly all of it",
		Summary:     fmt.Sprintf("%s connections are dialled and closed per request: %s of CPU", kind, human.Percent(share)),
		Evidence: []rules.Fact{
			rules.Share("dial + close share of CPU", share),
			rules.Share("dial share of CPU", dialShare),
			rules.Text("protocol", kind),
		},
		Fix:       fix,
		Example:   example,
		Locations: rules.Locations(callers, "code that dials or closes"),
		Frames:    cpu.Matched(evidence.Any(dialFrames, closeFrames), 12),
	}
	if kind == "UDP" {
		f.Caveats = append(f.Caveats, pass.Rule.Doc.Caveats)
	}
	if len(callers) > 0 {
		f.Summary += " (from " + rules.ShortFunc(callers[0].Func) + ")"
	}
	f.Claim = &rules.Claim{Level: rules.LevelCode, CPU: churn}
	pass.Report(f)
	return nil
}
