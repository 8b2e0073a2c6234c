package net001

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/perfdoctor/perfdoctor/facts"
	"github.com/perfdoctor/perfdoctor/rules/ruletest"

	"github.com/google/pprof/profile"

	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/internal/testprof"
	"github.com/perfdoctor/perfdoctor/rules"
)

// sink is a UDP server on loopback that drops what it receives.
func sink(t *testing.T) *net.UDPAddr {
	t.Helper()
	pc, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	go func() {
		buf := make([]byte, 2048)
		for {
			if _, _, err := pc.ReadFromUDP(buf); err != nil {
				return
			}
		}
	}()
	return pc.LocalAddr().(*net.UDPAddr)
}

var payload = []byte("report: 42 impressions")

func dialPerPacket(dst *net.UDPAddr) func() {
	return func() {
		c, err := net.DialUDP("udp", nil, dst)
		if err != nil {
			return
		}
		c.Write(payload)
		c.Close()
	}
}

func pooled(dst *net.UDPAddr) func() {
	pool := sync.Pool{New: func() any {
		c, _ := net.DialUDP("udp", nil, dst)
		return c
	}}
	return func() {
		c := pool.Get().(*net.UDPConn)
		if c == nil {
			return
		}
		c.Write(payload)
		pool.Put(c)
	}
}

func run(cpu *profile.Profile) rules.Result {
	return rules.Run(facts.New(testprof.Evidence(map[evidence.Kind]*profile.Profile{evidence.CPU: cpu})), []*rules.Rule{Rule})
}

func TestFiresOnDialPerPacket(t *testing.T) {
	res := run(testprof.CPU(t, 2*time.Second, 2, dialPerPacket(sink(t))))
	if len(res.Findings) != 1 {
		t.Fatalf("want a connection-churn finding, got %d (%v)", len(res.Findings), res.NotChecked)
	}
	f := res.Findings[0]
	if f.Impact < 0.2 || !strings.HasPrefix(f.Summary, "UDP") {
		t.Errorf("impact %.2f summary %q: want UDP churn >= 20%%", f.Impact, f.Summary)
	}
	if len(f.Locations) == 0 || !strings.Contains(f.Locations[0].Function, "dialPerPacket") {
		t.Errorf("locations %+v do not name the dialling code", f.Locations)
	}
}

func TestSilentWhenSocketsAreReused(t *testing.T) {
	res := run(testprof.CPU(t, 2*time.Second, 2, pooled(sink(t))))
	if len(res.Findings) != 0 {
		t.Fatalf("pooled sockets reported: %+v", res.Findings[0])
	}
}

func TestHTTPClientChurnGetsHTTPAdvice(t *testing.T) {
	cpu := testprof.Build(
		testprof.Stack{Value: 300, Funcs: []string{"net.(*netFD).connect", "net.(*sysDialer).dialSingle", "net.(*Dialer).DialContext", "net/http.(*Transport).dial", "net/http.(*Transport).dialConn", "main.callBackend"}},
		testprof.Stack{Value: 700, Funcs: []string{"main.work"}},
	)
	res := run(cpu)
	if len(res.Findings) != 1 || !strings.Contains(res.Findings[0].Fix, "MaxIdleConnsPerHost") {
		t.Fatalf("want HTTP reuse advice, got %+v", res.Findings)
	}
}

func TestServerClosingInboundConnectionsIsNotChurn(t *testing.T) {
	cpu := testprof.Build(
		testprof.Stack{Value: 300, Funcs: []string{"net.(*netFD).Close", "net.(*conn).Close", "net/http.(*conn).close", "net/http.(*conn).serve"}},
		testprof.Stack{Value: 700, Funcs: []string{"main.work"}},
	)
	if res := run(cpu); len(res.Findings) != 0 {
		t.Fatalf("server-side close reported as churn: %+v", res.Findings[0])
	}
}

// Native code through perf: a C client dialling per request fires, the
// same client keeping its connection does not (testdata/native/record.sh).
func TestNativeChurn(t *testing.T) {
	ruletest.Run(t, "testdata/native", []*rules.Rule{Rule})
}

// proxied returns a request through a real httputil.ReverseProxy to a
// loopback backend; keepAlive says whether the proxy keeps its upstream
// connections. The client keeps its own connection to the proxy, so any
// dialling is the proxy's.
func proxied(t *testing.T, keepAlive bool) func() {
	t.Helper()
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	t.Cleanup(backend.Close)
	target, _ := url.Parse(backend.URL)
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.Transport = &http.Transport{DisableKeepAlives: !keepAlive, MaxIdleConnsPerHost: 8}
	front := httptest.NewServer(rp)
	t.Cleanup(front.Close)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 8}}
	t.Cleanup(client.CloseIdleConnections)
	return func() {
		resp, err := client.Get(front.URL)
		if err != nil {
			return
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
}

// A reverse proxy without upstream keep-alive is told to turn it on in
// its transport; the same proxy keeping its upstream connections is quiet.
func TestReverseProxyWithoutKeepAlive(t *testing.T) {
	res := run(testprof.CPU(t, 2*time.Second, 2, proxied(t, false)))
	if len(res.Findings) != 1 {
		t.Fatalf("want a connection-churn finding, got %d (%v)", len(res.Findings), res.NotChecked)
	}
	if f := res.Findings[0]; !strings.Contains(f.Summary, "reverse proxy") || !strings.Contains(f.Fix, "keep-alive to upstreams") {
		t.Errorf("want the proxy's upstream keep-alive: %q\n%s", f.Summary, f.Fix)
	}
	if res := run(testprof.CPU(t, 2*time.Second, 2, proxied(t, true))); len(res.Findings) != 0 {
		t.Errorf("a proxy keeping its upstream connections reported: %+v", res.Findings[0])
	}
}

// A real server closing after every response (Tomcat, maxKeepAliveRequests=1,
// from the corpus) is told to keep connections; healthy corpus servers
// under the same load are not.
func TestServerCloseOnCorpus(t *testing.T) {
	for dir, want := range map[string]string{
		"../../corpus/jvm-tomcat-keepalive-off/bad": `top NET001 medium "closes its connection after each response" "maxKeepAliveRequests"`,
		"../../corpus/jvm-tomcat-jsp-healthy/bad":   `never NET001`,
		"../../corpus/jvm-jetty-static-healthy/bad": `never NET001`,
	} {
		ruletest.Expect(t, dir, []*rules.Rule{Rule}, want)
	}
}
