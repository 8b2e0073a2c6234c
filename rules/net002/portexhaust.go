// Package net002 detects short-lived outbound TCP connections piling up
// in TIME_WAIT until the local ports for a destination run out (finding
// class ephemeral-port-exhaustion).
package net002

import (
	"fmt"
	"math"
	"strconv"

	"github.com/perfdoctor/perfdoctor/facts"

	"github.com/perfdoctor/perfdoctor/bundle"
	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/internal/human"
	"github.com/perfdoctor/perfdoctor/rules"
)

// Rule is NET002.
var Rule = &rules.Rule{
	ID:    "NET002",
	Class: "ephemeral-port-exhaustion",
	Doc: rules.Doc{
		Title: "Outbound connections run out of ephemeral ports",
		Text: `Every TCP connection to one destination (address and port) needs its own
local port. The side that closes first keeps the connection in TIME_WAIT for
60 seconds (TCP_TIMEWAIT_LEN, fixed in the kernel), and the port stays taken.
So a client can open at most (usable ports) / 60 s new connections per second
to one destination: 28232 / 60 = 470/s with the default ip_local_port_range
32768-60999. Near that ceiling connect() spends its time searching for a free
port (inet_csk_get_port, __inet_hash_connect), then fails with
EADDRNOTAVAIL ("cannot assign requested address"); Go's HTTP client turns it
into dial errors and goroutines pile up.`,
		Evidence: `Outbound TCP sockets per remote endpoint from /proc/net/tcp and tcp6 at the
start and end of the window; net.ipv4.ip_local_port_range and tcp_tw_reuse.
The new connection rate to a destination is its TIME_WAIT entries closed in
the last 5 s of the window (dated by their TIME_WAIT timers) per second. For
snapshots without timers it is estimated as the larger of the TIME_WAIT
growth over the window and the TIME_WAIT count / 60 s, capped by the
namespace's new outbound connections per second (Tcp.ActiveOpens). Pressure is that rate against the ceiling, or the sockets held
to the destination against the usable ports, whichever is larger: low from
25% (of the ceiling; ports held count from 50%), medium from 50%, high from 80%. With a perf profile, the kernel's share in the
port search (inet_csk_get_port, __inet_hash_connect) is shown too.
Sockets on a listening port are inbound and not counted. TIME_WAIT sockets
have no owner, so for a target process the rule checks that the connections
are its own: it held a socket to the destination at either end, or its
stacks (CPU profile or perf) show connect(); when neither, another process
on the host makes them and the finding is low.`,
		Fix: `Reuse connections first: keep-alive and one connection pool per destination
(Go: one shared http.Client, Transport.MaxIdleConnsPerHost sized to the
concurrency, response bodies drained and closed). Only then, for outbound
connections that must stay short: net.ipv4.tcp_tw_reuse=1 (lets connect()
take a TIME_WAIT port when timestamps prove it safe; 2, the default, does it
for loopback only), a wider net.ipv4.ip_local_port_range, or more destination
addresses. Never tcp_tw_recycle: it broke clients behind NAT and was removed
from Linux 4.12. tcp_fin_timeout does not shorten TIME_WAIT (it is the
FIN_WAIT_2 timeout).`,
		Before: `resp, _ := http.Get(url) // DisableKeepAlives, or bodies not closed: a new connection each time`,
		After:  `var client = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}} // reused`,
		Caveats: `TIME_WAIT sockets belong to no process: the counts are the whole network
namespace's, so another program on the host talking to the same destination
counts too. The server side of a connection it closes first holds TIME_WAIT
too, but on its own port and so without limiting its clients.`,
		Since: "0.1",
		Refs: []string{
			"https://man7.org/linux/man-pages/man7/tcp.7.html",
			"https://vincent.bernat.ch/en/blog/2014-tcp-time-wait-state-linux",
		},
	},
	Needs: []rules.Input{rules.Host},
	Uses:  []rules.Input{rules.Perf},
	Facts: []facts.Key{facts.CPUStacks, facts.PerfStacks, facts.TimeWait},
	Check: check,
}

// PortSearch is the kernel's search for a free local port in connect() and bind().
var PortSearch = evidence.FuncPrefix("inet_csk_get_port", "__inet_hash_connect", "inet_hash_connect", "__inet_check_established", "inet_csk_find_open_port")

// Connects are the outbound connect paths a process's own stacks show when
// it opens connections: Go's dialer, the JDK's sockets, libc's connect and
// the kernel's.
func Connects(fn string) bool {
	switch fn {
	case "connect", "__connect", "__libc_connect":
		return true
	}
	return connectPrefixes(fn)
}

var connectPrefixes = evidence.FuncPrefix(
	"net.(*netFD).connect", "net.(*sysDialer)", "syscall.connect", "golang.org/x/sys/unix.connect",
	"java.net.Socket.connect", "sun.nio.ch.Net.connect", "sun.nio.ch.SocketChannelImpl.connect",
	"__sys_connect", "__x64_sys_connect", "tcp_v4_connect", "tcp_v6_connect", "inet_stream_connect",
)

// connectEvidence is the target's stacks to look for connect() in: the CPU
// profile (Go, JFR, or perf standing in), else perf's; nil without either.
// A process dialing fast enough for this rule to fire spends visible CPU in
// connect, so an empty family in a non-empty profile is telling.
func connectEvidence(pass *rules.Pass) *evidence.Stacks {
	for _, st := range []*evidence.Stacks{facts.Get(pass.Facts, facts.CPUStacks), facts.Get(pass.Facts, facts.PerfStacks)} {
		if st != nil && len(st.Samples) > 0 {
			return st
		}
	}
	return nil
}

const (
	low, medium, high = 0.25, 0.50, 0.80
	minSearchShare    = 0.05
)

func check(pass *rules.Pass) error {
	d, _ := pass.Evidence.SystemDelta()
	if d.End.Net == nil || d.End.Net.Sysctls.EphemeralPorts() == 0 {
		pass.Skip("the system snapshots have no TCP sockets or ip_local_port_range")
		return nil
	}
	dests := facts.Get(pass.Facts, facts.TimeWait)
	var search float64
	var searchFrames []string
	if st := facts.Get(pass.Facts, facts.PerfStacks); st != nil {
		search = st.Share(PortSearch)
		searchFrames = st.Matched(PortSearch, 6)
	}
	if len(dests) == 0 || (dests[0].Rate/dests[0].Ceiling < low && dests[0].PortsTaken < medium && search < minSearchShare) {
		return nil
	}
	w := dests[0]
	sys := d.End.Net.Sysctls
	sev := rules.Grade(w.Pressure, medium, high)
	f := rules.Finding{
		Severity: sev,
		Impact:   math.Min(w.Pressure, 1),
		Resource: "latency",
		ImpactBasis: "the busiest destination's new-connection rate against the ceiling of usable ports / 60 s TIME_WAIT " +
			"(or its share of the ports held); at 100% connect() fails with EADDRNOTAVAIL",
		Summary: fmt.Sprintf("New connections to %s at %.0f/s, %s of the ceiling of %.0f/s (%d ports / %d s TIME_WAIT); %d in TIME_WAIT",
			w.Addr, w.Rate, human.Percent(w.Rate/w.Ceiling), w.Ceiling, w.Ports, facts.TimeWaitSeconds, w.TimeWait),
		Evidence: []rules.Fact{
			rules.Text("destination", w.Addr),
			rules.Count("new connections per second (estimated)", w.Rate, "/s"),
			rules.Count("ceiling per destination", w.Ceiling, "/s"),
			rules.Share("rate against ceiling", w.Rate/w.Ceiling),
			rules.Count("TIME_WAIT to destination at end", float64(w.TimeWait), ""),
			rules.Count("TIME_WAIT growth over the window", float64(w.Growth), ""),
			rules.Count("TIME_WAIT closed in the last 5 s", float64(w.Recent), ""),
			rules.Count("sockets held to destination", float64(w.Held), ""),
			rules.Share("local ports taken for destination", w.PortsTaken),
			rules.Text("ip_local_port_range", fmt.Sprintf("%d-%d (%d ports)", sys.PortRangeLow, sys.PortRangeHigh, w.Ports)),
			rules.Text("tcp_tw_reuse", twReuse(sys.TCPTWReuse)),
			rules.Count("TIME_WAIT sockets on the host", float64(d.End.Net.TCPStates["TIME_WAIT"]), ""),
		},
		Fix: `Reuse connections to ` + w.Addr + ` (keep-alive, a pool per destination; in Go one shared http.Client with Transport.MaxIdleConnsPerHost sized to the concurrency, bodies drained and closed). ` +
			`Only if they must stay short-lived: ` + reuseAdvice(sys.TCPTWReuse) + `, widen net.ipv4.ip_local_port_range, or spread over more destination addresses. Never tcp_tw_recycle (removed in Linux 4.12, it broke clients behind NAT).`,
		Example: pass.Rule.Doc.After,
		Caveats: []string{pass.Rule.Doc.Caveats},
		Frames:  searchFrames,
	}
	if w.SynSent > 0 {
		f.Evidence = append(f.Evidence, rules.Count("SYN_SENT to destination at end", float64(w.SynSent), ""))
	}
	if v, ok := d.Counter("Tcp.ActiveOpens"); ok && d.Seconds > 0 {
		f.Evidence = append(f.Evidence, rules.Count("outbound connections opened per second (host)", float64(v)/d.Seconds, "/s"))
	}
	if v, ok := d.Counter("TcpExt.TCPTimeWaitOverflow"); ok && v > 0 {
		f.Evidence = append(f.Evidence, rules.Count("TIME_WAIT entries dropped, tcp_max_tw_buckets full", float64(v), ""))
	}
	if search > 0 {
		f.Evidence = append(f.Evidence, rules.Share("perf samples searching for a local port", search))
	}
	if w.Own == 0 {
		// TIME_WAIT sockets have no owner. The target held no socket to the
		// destination at either end; short connections can fall between
		// two instants, so its stacks decide: a process that dials at this
		// rate shows connect() in them.
		pid := "the target process"
		if p := d.End.Process; p != nil {
			pid = fmt.Sprintf("pid %d", p.PID)
		}
		switch stacks := connectEvidence(pass); {
		case stacks == nil:
			f.Caveats = append(f.Caveats, fmt.Sprintf("%s held no socket to %s at either end of the window and there are no stacks to show it connecting: the connections may be another process's on this host.", pid, w.Addr))
		case stacks.Share(Connects) == 0:
			f.Severity, f.Impact = rules.Low, math.Min(f.Impact, 0.05)
			f.Summary += fmt.Sprintf("; %s neither holds a socket to it nor calls connect(): another process on the host makes these connections", pid)
			f.Caveats = append(f.Caveats, fmt.Sprintf("%s held no socket to %s at either end of the window and its stacks show no connect(): the connections are another process's; the host is still near its port ceiling to that destination.", pid, w.Addr))
		}
	}
	// New connections above the ceiling take ports faster than TIME_WAIT
	// returns them: connects will fail.
	f.Growing = f.Severity >= rules.Medium && w.Rate > w.Ceiling
	if w.Rate/w.Ceiling < low && w.PortsTaken < medium {
		f.Summary = fmt.Sprintf("connect() spends %s of perf samples searching for a free local port (%s)", human.Percent(search), w.Addr)
		f.Severity, f.Impact = rules.Grade(search, 0.10, 0.20), search
		f.Resource = "cpu"
	}
	pass.Report(f)
	return nil
}

func twReuse(v int) string {
	switch v {
	case 0:
		return "0 (off)"
	case 1:
		return "1 (on for outbound connections)"
	case 2:
		return "2 (loopback only, the default)"
	}
	return strconv.Itoa(v)
}

func reuseAdvice(v int) string {
	if v == 1 {
		return "tcp_tw_reuse is already 1"
	}
	return "set net.ipv4.tcp_tw_reuse=1 on this client (outbound connections only; it needs TCP timestamps, on by default)"
}

// Ceiling is the new-connection ceiling per destination for a snapshot's
// port range, 0 when unknown.
func Ceiling(s *bundle.SystemSnapshot) float64 {
	if s == nil || s.Net == nil {
		return 0
	}
	return float64(s.Net.Sysctls.EphemeralPorts()) / facts.TimeWaitSeconds
}
