package pool001

import (
	"strings"
	"testing"

	"github.com/perfdoctor/perfdoctor/formats/jfr"
)

// Jetty's pool counts its connectors' threads out of its size; a pool that
// is not Jetty's counts none.
func TestConnectorThreads(t *testing.T) {
	acceptor := jfr.ThreadLoad{Name: "qtp889074285-18-acceptor-0@38b0d42e-oejs.ServerConnector@14c141c0{HTTP/1.1}"}
	other := jfr.ThreadLoad{Name: "qtp123-5-acceptor-0@1-oejs.ServerConnector@2"}
	worker := jfr.ThreadLoad{Name: "qtp889074285-20"}
	jetty := func(size int) *reading { return &reading{what: jettyPool, name: "qtp889074285", size: size} }
	for _, c := range []struct {
		name    string
		s       *jfr.Summary
		args    []string
		r       *reading
		want    int
		wantSub string
	}{
		{"acceptor by name, default selector", &jfr.Summary{Cores: 2, Threads: []jfr.ThreadLoad{worker, acceptor, other}}, nil, jetty(8), 2, "1 acceptor, seen by name; 1 selector, Jetty's default for 2 CPUs and 8 threads"},
		{"defaults on 32 CPUs, 200 threads", &jfr.Summary{Cores: 32}, nil, jetty(200), 4 + 12, "4 acceptors, Jetty's default for 32 CPUs; 12 selectors"},
		{"settings", &jfr.Summary{Cores: 2}, []string{"--server.jetty.threads.acceptors=0", "--server.jetty.threads.selectors=3"}, jetty(8), 3, "0 acceptors, set; 3 selectors, set"},
		{"Tomcat's executor", &jfr.Summary{Cores: 2, Threads: []jfr.ThreadLoad{acceptor}}, nil, &reading{what: "Tomcat's connector executor", name: "http-nio-8080-exec", size: 2}, 0, ""},
		{"no recording", nil, nil, jetty(8), 0, ""},
		{"as many as the pool", &jfr.Summary{Cores: 2}, []string{"jetty.http.selectors=4"}, jetty(4), 0, ""},
	} {
		n, from := connectorThreads(c.s, c.args, c.r)
		if n != c.want || (c.wantSub != "" && !strings.Contains(from, c.wantSub)) {
			t.Errorf("%s: %d %q, want %d with %q", c.name, n, from, c.want, c.wantSub)
		}
	}
}
