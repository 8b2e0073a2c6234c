// Package net001 detects connections dialled and closed per request
// instead of reused (finding class connection-churn).
package net001

import (
	"fmt"
	"strings"

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
connections. The calling application frames are named. Reports from 3%.

Native and JVM code the same way, by the frames any language reaches: the
connect system call (libc's connect, the kernel's __sys_connect and
tcp_v4_connect; the JDK's sun.nio.ch.Net.connect and Socket.connect, Netty's
doConnect), socket creation (__sys_socket), and a socket's close in the kernel
(sock_close, inet_release) or the JDK (SocketChannelImpl's close). Closes count
only where the process also dials (connect holds at least 1% of CPU): a server
that only accepts and closes is serving clients that do not keep their
connections, which is the clients' fix. Where the load counted its units, the
new TCP connections per unit (/proc/net/snmp) are quoted: one per unit means
nothing is reused. On a C client dialling per 64-byte request (rules/net001/
testdata/native-churn), connect, socket and close hold 25-30% of CPU; the same
program keeping its connection, 0.

A Go reverse proxy (httputil.ReverseProxy, Caddy's reverse_proxy, Traefik) dials on
its transport's own goroutines; when its request path is in the profile, the
dialling is to its upstreams and the fix is its transport's keep-alive, a setting
of the proxy. Caddy with keepalive off (corpus go-caddy-proxy-keepalive-off):
dial and close 37% of CPU, 1.01 new connections per request; keep-alive measured
1.63x; the finding predicts 2.0x [1.6, 2.7] (see the gain below).

A server closing its connection after every response shows in the work
accounting: perfdoctor's load keeps connections alive and dials again only when a
response closes one, so new TCP connections per request (/proc/net/snmp) of 0.5 or
more under its HTTP load, with accept, set-up and close frames at 3% of CPU or
more, say the server closes them. Healthy corpus servers: 0.0099 new connections
per request at most; Tomcat with maxKeepAliveRequests=1 (corpus
jvm-tomcat-keepalive-off): 1.01, accept/set-up/close 14% of CPU, keep-alive
measured 3.0x. The frames miss the kernel's handshakes in soft interrupts and the
client's side.

The gain: a connection costs more than the frames that open and close it
(socket set-up and options, the event loop's registration of each descriptor,
the program's per-connection state, the handshake's and teardown's packets in
soft interrupts). On six measured interventions keeping connections removed
1.2-1.7 times the frames' share of the process's CPU per unit (HAProxy 0.67 of
0.39, Tomcat 0.59 of 0.40, Caddy 0.43 of 0.36, casebook D2 0.72 of 0.58 and R2
0.59 of 0.35; nginx's proxy at least 0.62 of 0.42 from its 2.64x throughput):
the estimate is the median, 1.5 times the share, the range 1.0-1.75 times.`,
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
	Facts: []facts.Key{facts.CPUStacks, facts.WorkDone, facts.SystemFrames},
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
	// reverseProxy is a Go reverse proxy's request path: its dialling is to
	// its upstreams, set by its configuration.
	reverseProxy = evidence.FuncPrefix("net/http/httputil.(*ReverseProxy)", "github.com/caddyserver/caddy/v2/modules/caddyhttp/reverseproxy.",
		"github.com/traefik/traefik/")

	// Any language reaches the kernel's connect and a socket's close; the
	// JDK and Netty have their own names above them.
	connectFrames = evidence.FuncPrefix(
		"__libc_connect", "__sys_connect", "__x64_sys_connect", "tcp_v4_connect", "tcp_v6_connect", "__inet_stream_connect",
		"__sys_socket", "__x64_sys_socket",
		"sun.nio.ch.Net.connect", "java.net.Socket.connect", "sun.nio.ch.SocketChannelImpl.connect", "sun.nio.ch.NioSocketImpl.connect",
		"io.netty.channel.socket.nio.NioSocketChannel.doConnect", "io.netty.channel.epoll.AbstractEpollChannel.doConnect",
	)
	socketCloseFrames = evidence.FuncPrefix(
		"sock_close", "inet_release", "__sock_release",
		"sun.nio.ch.SocketChannelImpl.implCloseSelectableChannel", "sun.nio.ch.NioSocketImpl.close", "java.net.Socket.close",
	)
	goFrames = evidence.FuncPrefix("net.", "net/http.", "runtime.")
)

const minShare = 0.03

func check(pass *rules.Pass) error {
	if !pass.EnoughCPU() {
		return nil
	}
	cpu := facts.Get(pass.Facts, facts.CPUStacks)
	dials, closes, inbound := cpu.Has(dialFrames), cpu.Has(closeFrames), cpu.Has(inboundClose)
	connects, socketCloses, inGo := cpu.Has(connectFrames), cpu.Has(socketCloseFrames), cpu.Has(goFrames)
	// Native and JVM code: connect anywhere, and a socket's close where the
	// process dials at all (see Doc.Evidence); Go's own frames decide for Go.
	nativeDials := cpu.ShareWhere(func(s evidence.Sample) bool { return connects(s) && !inGo(s) }) >= 0.01
	native := func(s evidence.Sample) bool {
		return !inGo(s) && (connects(s) || (nativeDials && socketCloses(s)))
	}
	churn := func(s evidence.Sample) bool { return dials(s) || (closes(s) && !inbound(s)) || native(s) }
	share := cpu.ShareWhere(churn)
	if share < minShare {
		checkServerClose(pass, cpu)
		return nil
	}
	dialShare := cpu.Share(dialFrames)
	kind, fix, example := "TCP", "Keep connections open and reuse them: a pool of connections per destination.", ""
	proxy := false
	if nativeShare := cpu.ShareWhere(native); nativeShare > share/2 {
		dialShare = cpu.ShareWhere(func(s evidence.Sample) bool { return connects(s) && !inGo(s) })
		fix, example = nativeFix(pass, cpu)
	}
	udp, viaHTTP := cpu.Has(udpDial), cpu.Has(httpClient)
	switch {
	case cpu.ShareWhere(func(s evidence.Sample) bool { return dials(s) && udp(s) }) > dialShare/2:
		kind = "UDP"
		fix = "Keep connected UDP sockets and reuse them: a sync.Pool of *net.UDPConn per destination, held in a sync.Map keyed by address."
		example = pass.Rule.Doc.After
	case cpu.ShareWhere(func(s evidence.Sample) bool { return dials(s) && viaHTTP(s) }) > dialShare/2 && cpu.Share(reverseProxy) >= 0.01:
		// The dials run on the transport's own goroutines, so the proxy is
		// known from its request path elsewhere in the profile.
		kind, proxy = "HTTP", true
		fix = "The proxy opens a new connection to its upstream for every request: turn keep-alive to upstreams on in its " +
			"transport and size its idle pool to the concurrency (Caddy: remove `keepalive off` from reverse_proxy's transport, " +
			"set keepalive_idle_conns_per_host; Traefik: maxIdleConnsPerHost in serversTransport; httputil.ReverseProxy: a " +
			"Transport without DisableKeepAlives, MaxIdleConnsPerHost sized to the concurrency)."
		example = "reverse_proxy 127.0.0.1:8080 {\n    transport http {\n        keepalive off\n    }\n}\n->\nreverse_proxy 127.0.0.1:8080 {\n    transport http {\n        keepalive_idle_conns_per_host 64\n    }\n}"
	case cpu.ShareWhere(func(s evidence.Sample) bool { return dials(s) && viaHTTP(s) }) > dialShare/2:
		kind = "HTTP"
		fix = "Share one http.Client (one Transport) for the process, set Transport.MaxIdleConnsPerHost to the request concurrency (the default is 2), and always read response bodies to EOF and close them so connections return to the pool."
		example = "var client = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}} // one per process"
	}
	// The caller is the first frame of the program's own: above the
	// kernel and the shared libraries for native code.
	system := facts.Get(pass.Facts, facts.SystemFrames)
	appFrame := cpu.First(func(fn string) bool {
		return rules.IsApplication(fn) && !system(fn) && !strings.HasPrefix(fn, "[unknown]")
	})
	callers := cpu.TopSites(5, func(s evidence.Sample) *evidence.Frame {
		if !churn(s) {
			return nil
		}
		return appFrame(s)
	})
	f := rules.Finding{
		Severity:    rules.SeverityFor(share),
		Resource:    "cpu",
		ImpactBasis: "share of CPU samples dialling or closing outbound connections, which reuse removes, and with it what each connection drags outside those frames (socket set-up, event-loop registration, the handshake's soft interrupts): 1.5x the share, 1.0-1.75x, as measured on six interventions",
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
	rules.WithConnectionDrag(&f, share, share, share)
	if proxy {
		f.Summary = fmt.Sprintf("The reverse proxy dials and closes an upstream connection per request: %s of CPU", human.Percent(share))
	}
	if kind == "UDP" {
		f.Caveats = append(f.Caveats, pass.Rule.Doc.Caveats)
	}
	if w := facts.Get(pass.Facts, facts.WorkDone); w.HasConns && w.Unit != "" {
		f.Evidence = append(f.Evidence, rules.Text("new TCP connections per "+w.Unit+" (host)", fmt.Sprintf("%.2f", w.NewConnsPerUnit)))
	}
	if len(callers) > 0 {
		f.Summary += " (from " + rules.ShortFunc(callers[0].Func) + ")"
	}
	f.Claim = &rules.Claim{Level: rules.LevelCode, CPU: churn, Regrade: rules.SeverityFor}
	pass.Report(f)
	return nil
}

// nativeFix is the reuse a native or JVM program's dialling calls for, by
// the program where it is a known server.
func nativeFix(pass *rules.Pass, cpu *evidence.Stacks) (fix, example string) {
	comm := ""
	if s := pass.Evidence.SystemEnd; s != nil && s.Process != nil {
		comm = s.Process.Comm
	}
	java := cpu.Share(evidence.FuncPrefix("java.", "sun.", "jdk.", "io.netty.")) > 0
	switch {
	case comm == "nginx":
		return "nginx opens a connection to the upstream for every proxied request: keep them with an upstream block's " +
				"keepalive (idle connections per worker), HTTP/1.1 and an empty Connection header toward it.",
			"upstream backend {\n    server 127.0.0.1:8080;\n    keepalive 32;\n}\nlocation / {\n    proxy_pass http://backend;\n    proxy_http_version 1.1;\n    proxy_set_header Connection \"\";\n}"
	case comm == "haproxy":
		return "haproxy closes the server side after each request: use option http-keep-alive (the default mode) instead of " +
				"option http-server-close or httpclose, and let http-reuse (safe, the default) share idle server connections.",
			"option http-server-close\n->\noption http-keep-alive\nhttp-reuse safe"
	case java:
		return "Reuse connections: one pooled client per process (java.net.http.HttpClient shared, Apache HttpClient's " +
			"PoolingHttpClientConnectionManager, OkHttp's ConnectionPool, a JDBC pool such as HikariCP), responses read " +
			"to the end and closed so their connections return to the pool.", ""
	}
	return "Keep connections open and reuse them: a pool of connections per destination, HTTP keep-alive, or one long-lived " +
		"connection multiplexing requests (HTTP/2, a pipelined protocol).", ""
}

// Connections the server accepts and closes: the listener's accept, a
// socket's close, and a JVM server's set-up of each new connection.
var inboundLifecycle = evidence.FuncPrefix(
	"__sys_accept", "__x64_sys_accept", "inet_csk_accept", "do_accept", "sock_close", "inet_release", "__sock_release",
	"net.(*TCPListener).accept", "net.(*netFD).accept", "net.(*conn).Close", "net/http.(*conn).close",
	"sun.nio.ch.ServerSocketChannelImpl.accept", "sun.nio.ch.Net.accept", "sun.nio.ch.NioSocketImpl.accept",
	"sun.nio.ch.SocketChannelImpl.implCloseSelectableChannel", "sun.nio.ch.NioSocketImpl.close",
	"org.apache.tomcat.util.net.Acceptor.run", "org.apache.tomcat.util.net.NioEndpoint.setSocketOptions",
	"org.apache.tomcat.util.net.NioEndpoint$NioSocketWrapper.doClose", "org.apache.tomcat.util.net.NioChannel.close",
	"org.eclipse.jetty.server.ServerConnector.accept", "org.eclipse.jetty.io.ManagedSelector$Accept",
	"io.netty.channel.socket.nio.NioServerSocketChannel.doReadMessages",
)

// minNewConnsPerUnit is where a keep-alive load's new connections say the
// server closes them: perfdoctor's load keeps every connection open and
// dials again only when a response closes it, so a server that honours
// keep-alive shows about 0 per request (every healthy corpus scenario:
// 0.0099 at most) and one closing after every response 1.0 (Tomcat with
// maxKeepAliveRequests=1: 1.01). Half the requests is far from both. The
// counters are the host's: at a few requests per second another program's
// connections weigh (0.42 at 22 pushes/s on a busy machine), which is why
// the accepting and closing must also hold minShare of the CPU.
const minNewConnsPerUnit = 0.5

// checkServerClose reports a server closing its connections after each
// response, when the load kept them alive: the new connections per request
// come from the host's TCP counters, and what accepting and closing them
// costs from the profile.
func checkServerClose(pass *rules.Pass, cpu *evidence.Stacks) {
	l := pass.Evidence.Load
	w := facts.Get(pass.Facts, facts.WorkDone)
	httpLoad := l != nil && (l.Method != "" || strings.HasPrefix(l.URL, "http://") || strings.HasPrefix(l.URL, "https://"))
	if !httpLoad || l.Mode == "command" || !w.HasConns || w.NewConnsPerUnit < minNewConnsPerUnit {
		return
	}
	lifecycle := cpu.Has(inboundLifecycle)
	share := cpu.ShareWhere(lifecycle)
	if share < minShare {
		return
	}
	f := rules.Finding{
		Severity: rules.SeverityFor(share),
		Resource: "cpu",
		ImpactBasis: "share of CPU accepting, setting up and closing connections; keep-alive removes it, and with it " +
			"what each connection drags outside those frames (the TCP handshakes and teardowns the kernel handles in soft interrupts, " +
			"the event loop's registrations): 1.5x the share, 1.0-1.75x, as measured on six interventions; the client's connects, which fall too, are not counted",
		Summary: fmt.Sprintf("The server closes its connection after each response: %.2f new connections per %s under a load that keeps them alive; "+
			"accepting and closing them is %s of CPU", w.NewConnsPerUnit, w.Unit, human.Percent(share)),
		Evidence: []rules.Fact{
			rules.Text("new TCP connections per "+w.Unit+" (host)", fmt.Sprintf("%.2f", w.NewConnsPerUnit)),
			rules.Text("the load", "keeps its connections open; it dials again only when a response closes one"),
			rules.Share("accept, set-up and close share of CPU", share),
		},
		Fix:    serverKeepAliveFix(pass, cpu),
		Frames: cpu.Matched(inboundLifecycle, 12),
	}
	rules.WithConnectionDrag(&f, share, share, share)
	f.Claim = &rules.Claim{Level: rules.LevelConfig, CPU: lifecycle, Regrade: rules.SeverityFor}
	pass.Report(f)
}

// serverKeepAliveFix names the keep-alive settings of the server seen.
func serverKeepAliveFix(pass *rules.Pass, cpu *evidence.Stacks) string {
	comm := ""
	if s := pass.Evidence.SystemEnd; s != nil && s.Process != nil {
		comm = s.Process.Comm
	}
	const general = "Let connections carry many requests: "
	switch {
	case cpu.Share(evidence.FuncPrefix("org.apache.tomcat.", "org.apache.catalina.", "org.apache.coyote.")) > 0:
		return general + "Tomcat's Connector maxKeepAliveRequests (default 100; -1 for no limit; 1 closes after every response) and keepAliveTimeout in server.xml."
	case cpu.Share(evidence.FuncPrefix("org.eclipse.jetty.")) > 0:
		return general + "Jetty's connector idleTimeout well above the gap between a client's requests, and no Connection: close set by the application."
	case comm == "nginx":
		return general + "nginx's keepalive_timeout (not 0) and keepalive_requests (default 1000)."
	case comm == "apache2" || comm == "httpd":
		return general + "Apache's KeepAlive On, MaxKeepAliveRequests (default 100; 0 for no limit) and KeepAliveTimeout."
	case comm == "haproxy":
		return general + "haproxy's option http-keep-alive (the default) instead of option httpclose, and timeout http-keep-alive."
	case cpu.Share(evidence.FuncPrefix("net/http.")) > 0:
		return general + "net/http keeps them by default: remove SetKeepAlivesEnabled(false) and any Connection: close the handlers set, and keep IdleTimeout above the clients' gaps."
	}
	return general + "turn the server's keep-alive on (its idle timeout above the gap between a client's requests, and no limit of one request per connection)."
}
