package system

import (
	"bytes"
	"net"
	"os"
	"strings"
	"testing"
)

func TestParseTCP(t *testing.T) {
	var got []tcpSocket
	for _, name := range []string{"testdata/proc/net/tcp", "testdata/proc/net/tcp6"} {
		data, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if err := parseTCP(bytes.NewReader(data), func(s tcpSocket) { got = append(got, s) }); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
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
		if err := parseTCP(strings.NewReader(bad), func(tcpSocket) {}); err == nil {
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
		parseTCP(bytes.NewReader(data), func(s tcpSocket) {
			if len(s.local) != 4 && len(s.local) != 16 || len(s.remote) != 4 && len(s.remote) != 16 || s.lport > 65535 {
				t.Fatalf("bad socket %+v", s)
			}
			endpoint(s.remote, s.rport)
		})
	})
}
