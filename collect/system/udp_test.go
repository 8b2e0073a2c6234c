package system

import (
	"bufio"
	"bytes"
	"context"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/perfdoctor/perfdoctor/bundle"
)

func TestParseUDP(t *testing.T) {
	got := parseFixtures(t, "testdata/proc/net/udp", "testdata/proc/net/udp6")
	if len(got) != 9 {
		t.Fatalf("%d sockets, want 9", len(got))
	}
	if s := got[2]; s.state != udpConnected || !s.remote.Equal(net.IPv4(10, 0, 0, 53)) || s.rport != 53 || s.inode != 88883 {
		t.Errorf("connected socket = %+v", s)
	}
	if s := got[4]; s.state != 0x07 || s.lport != 5353 || s.rxQueue != 0x300 || s.inode != 77778 {
		t.Errorf("server socket = %+v", s)
	}
	if s := got[7]; !s.remote.Equal(net.IPv6loopback) || s.rport != 5354 || s.inode != 88885 {
		t.Errorf("udp6 connected socket = %+v", s)
	}
}

// The fixture's target holds two connected sockets to a UDP server on
// 127.0.0.1:5353 (process 999), one to [::1]:5354 (999 again) and one to
// 10.0.0.53:53, besides an unconnected one: three peers, the loopback ones
// with their owner and its CPU time.
func TestSnapshotUDPPeers(t *testing.T) {
	snap, err := Snapshot(fixtureRoots(t, "sys-v2"), 1234)
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Errors) != 0 {
		t.Errorf("errors: %q", snap.Errors)
	}
	n := snap.Net
	if n == nil || !n.UDPPeersRead {
		t.Fatalf("net = %+v, want UDP peers read", n)
	}
	other := &bundle.PeerProcess{PID: 999, Comm: "other", StartTime: 1700000000 + 50, UserCPUSeconds: 2.5, SystemCPUSeconds: 0.5}
	want := []bundle.UDPPeer{
		{Addr: "127.0.0.1:5353", Sockets: 2, Local: other},
		{Addr: "10.0.0.53:53", Sockets: 1},
		{Addr: "[::1]:5354", Sockets: 1, Local: other},
	}
	if len(n.UDPPeers) != len(want) {
		t.Fatalf("peers = %+v, want %+v", n.UDPPeers, want)
	}
	for i, w := range want {
		g := n.UDPPeers[i]
		if g.Addr != w.Addr || g.Sockets != w.Sockets || (g.Local == nil) != (w.Local == nil) || g.Local != nil && *g.Local != *w.Local {
			t.Errorf("peer %d = %+v (local %+v), want %+v (local %+v)", i, g, g.Local, w, w.Local)
		}
	}
	// Without a target (the host's snapshot) nothing is the process's.
	host, err := Snapshot(fixtureRoots(t, "sys-v2"), 0)
	if err != nil {
		t.Fatal(err)
	}
	if host.Net != nil && (host.Net.UDPPeersRead || len(host.Net.UDPPeers) > 0) {
		t.Errorf("host snapshot has UDP peers: %+v", host.Net.UDPPeers)
	}
}

func FuzzUDPPeers(f *testing.F) {
	for _, name := range []string{"testdata/proc/net/udp", "testdata/proc/net/udp6"} {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var socks []tcpSocket
		own := map[uint64]bool{}
		parseSockets(bytes.NewReader(data), func(s tcpSocket) {
			socks = append(socks, s)
			if s.inode%2 == 1 {
				own[s.inode] = true
			}
		})
		peers, ends := udpPeers(socks, own)
		if len(peers) > bundle.MaxRemotes {
			t.Fatalf("%d peers", len(peers))
		}
		for _, p := range peers {
			if _, _, err := net.SplitHostPort(p.Addr); err != nil || p.Sockets < 1 {
				t.Fatalf("peer %+v", p)
			}
		}
		for addr, inodes := range ends {
			for ino := range inodes {
				if own[ino] || ino == 0 {
					t.Fatalf("%s: the target's own or no inode %d is a peer's end", addr, ino)
				}
			}
		}
	})
}

// TestHelperUDPServer is the peer of TestUDPPeerLive when run as a child:
// a UDP echo server on loopback that prints its port and serves until its
// standard input closes.
func TestHelperUDPServer(t *testing.T) {
	if os.Getenv("PERFDOCTOR_UDP_PEER_HELPER") != "1" {
		t.Skip("run by TestUDPPeerLive")
	}
	c, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	os.Stdout.WriteString(strconv.Itoa(c.LocalAddr().(*net.UDPAddr).Port) + "\n")
	go func() {
		buf := make([]byte, 512)
		for {
			n, from, err := c.ReadFrom(buf)
			if err != nil {
				return
			}
			c.WriteTo(buf[:n], from)
		}
	}()
	os.Stdin.Read(make([]byte, 1)) // until the test closes it
}

// TestUDPPeerLive: this process connects a UDP socket to a server in a
// child process on loopback; the snapshot must show the peer and the
// child's PID, and the child's CPU must not fall between two snapshots.
func TestUDPPeerLive(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("needs /proc")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestHelperUDPServer$")
	cmd.Env = append(os.Environ(), "PERFDOCTOR_UDP_PEER_HELPER=1")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		stdin.Close()
		cmd.Wait()
	}()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("helper's port: %v", err)
	}
	addr := "127.0.0.1:" + strings.TrimSpace(line)
	conn, err := net.Dial("udp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	exchange := func(n int) {
		buf := make([]byte, 64)
		for range n {
			conn.SetDeadline(time.Now().Add(5 * time.Second))
			if _, err := conn.Write([]byte("ping")); err != nil {
				t.Fatal(err)
			}
			if _, err := conn.Read(buf); err != nil {
				t.Fatal(err)
			}
		}
	}
	exchange(10)
	peer := func() bundle.UDPPeer {
		snap, err := Snapshot(Roots{}, os.Getpid())
		if err != nil {
			t.Fatal(err)
		}
		if snap.Net == nil || !snap.Net.UDPPeersRead {
			t.Fatalf("no UDP peers read: errors %q", snap.Errors)
		}
		for _, p := range snap.Net.UDPPeers {
			if p.Addr == addr {
				return p
			}
		}
		t.Fatalf("peers %+v lack %s (errors %q)", snap.Net.UDPPeers, addr, snap.Errors)
		return bundle.UDPPeer{}
	}
	a := peer()
	if a.Sockets != 1 || a.Local == nil || a.Local.PID != cmd.Process.Pid || a.Local.Comm == "" || a.Local.StartTime == 0 {
		t.Fatalf("peer = %+v (local %+v), want one socket to process %d", a, a.Local, cmd.Process.Pid)
	}
	exchange(2000)
	b := peer()
	if b.Local == nil || b.Local.PID != a.Local.PID || b.Local.CPUSeconds() < a.Local.CPUSeconds() {
		t.Errorf("second snapshot's peer = %+v, first %+v", b.Local, a.Local)
	}
	t.Logf("peer %s: process %d (%s), CPU %.2f s -> %.2f s", addr, b.Local.PID, b.Local.Comm, a.Local.CPUSeconds(), b.Local.CPUSeconds())
}
