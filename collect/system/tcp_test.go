package system

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"strings"
	"testing"

	"github.com/perfdoctor/perfdoctor/bundle"
)

func TestParseTCP(t *testing.T) {
	got := parseFixtures(t, "testdata/proc/net/tcp", "testdata/proc/net/tcp6")
	if len(got) != 8 {
		t.Fatalf("%d sockets, want 8", len(got))
	}
	s := got[6]
	if !s.local.Equal(net.IPv4(127, 0, 0, 1)) || s.lport != 0x9C43 || !s.remote.Equal(net.IPv4(1, 0, 0, 10)) || s.rport != 7070 ||
		s.state != tcpTimeWait || s.timer != timerTimeWait || s.expires != 0x1700 {
		t.Errorf("TIME_WAIT socket = %+v", s)
	}
	if v6 := got[7]; len(v6.local) != 16 || v6.lport != 8080 || v6.state != tcpListen {
		t.Errorf("tcp6 listener = %+v", v6)
	}
	for _, bad := range []string{
		"0: 0100007F:17AC",
		"0: 0100007F 00000000:0000 0A 00000000:00000000 00:00000000",
		"0: 0100007F:17AC 00000000:0000 ZZ 00000000:00000000 00:00000000",
		"0: 0100007F:1FFFF 00000000:0000 0A 00000000:00000000 00:00000000",
		"0: 0100007G:17AC 00000000:0000 0A 00000000:00000000 00:00000000",
		"0: 0100007F:17AC 00000000:0000 0A 0000000000000000 00:00000000",
	} {
		if err := parseSockets(strings.NewReader(bad), func(tcpSocket) {}); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func FuzzParseTCP(f *testing.F) {
	for _, name := range []string{"testdata/proc/net/tcp", "testdata/proc/net/tcp6"} {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		parseSockets(bytes.NewReader(data), func(s tcpSocket) {
			if len(s.local) != 4 && len(s.local) != 16 || len(s.remote) != 4 && len(s.remote) != 16 || s.lport > 65535 {
				t.Fatalf("bad socket %+v", s)
			}
			endpoint(s.remote, s.rport)
		})
	})
}

// A host busier than the snapshot's bound keeps the target's endpoints: 40
// other endpoints with thousands of TIME_WAIT sockets each must not push
// out the one backend the target holds a single connection to.
func TestKeepRemotesKeepsTheTargets(t *testing.T) {
	var remotes []bundle.RemoteEndpoint
	for i := range 40 {
		remotes = append(remotes, bundle.RemoteEndpoint{Addr: fmt.Sprintf("10.0.0.%d:80", i), Total: 1000 + i})
	}
	remotes = append(remotes, bundle.RemoteEndpoint{Addr: "10.0.1.1:5432", Total: 1, Process: 1})
	kept := keepRemotes(remotes, bundle.MaxRemotes)
	if len(kept) != bundle.MaxRemotes {
		t.Fatalf("kept %d endpoints, want %d", len(kept), bundle.MaxRemotes)
	}
	if last := kept[len(kept)-1]; last.Addr != "10.0.1.1:5432" {
		t.Errorf("last kept %+v, want the target's backend (busiest first, the target's kept)", last)
	}
	if first := kept[0]; first.Addr != "10.0.0.39:80" {
		t.Errorf("first kept %+v, want the busiest", first)
	}
	for _, r := range kept {
		if r.Total < 1000 && r.Process == 0 {
			t.Errorf("kept %+v over a busier endpoint", r)
		}
	}
}

// parseFixtures parses socket tables saved from /proc/net (tcp, tcp6, udp,
// udp6), one after the other.
func parseFixtures(t *testing.T, names ...string) []tcpSocket {
	t.Helper()
	var got []tcpSocket
	for _, name := range names {
		data, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if err := parseSockets(bytes.NewReader(data), func(s tcpSocket) { got = append(got, s) }); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	return got
}
