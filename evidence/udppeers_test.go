package evidence

import (
	"testing"
	"time"

	"github.com/perfdoctor/perfdoctor/bundle"
)

func TestLocalUDPPeers(t *testing.T) {
	t0 := time.Unix(1700000000, 0)
	peer := func(pid int, start, cpu float64) *bundle.PeerProcess {
		return &bundle.PeerProcess{PID: pid, Comm: "coredns", StartTime: start, UserCPUSeconds: cpu, SystemCPUSeconds: cpu / 2}
	}
	snap := func(at time.Time, read bool, peers ...bundle.UDPPeer) *bundle.SystemSnapshot {
		return &bundle.SystemSnapshot{Time: at, Net: &bundle.NetInfo{UDPPeersRead: read, UDPPeers: peers}}
	}
	start := snap(t0, true,
		bundle.UDPPeer{Addr: "127.0.0.1:5300", Sockets: 3, Local: peer(10, 100, 2)},
		bundle.UDPPeer{Addr: "127.0.0.1:5301", Sockets: 1, Local: peer(11, 100, 1)},
		bundle.UDPPeer{Addr: "127.0.0.1:5302", Sockets: 1, Local: peer(12, 100, 1)},
		bundle.UDPPeer{Addr: "10.0.0.53:53", Sockets: 2})
	end := snap(t0.Add(20*time.Second), true,
		bundle.UDPPeer{Addr: "127.0.0.1:5300", Sockets: 4, Local: peer(10, 100, 6)},
		bundle.UDPPeer{Addr: "127.0.0.1:5301", Sockets: 1, Local: peer(11, 200, 1)}, // another process by then
		bundle.UDPPeer{Addr: "127.0.0.1:5302", Sockets: 1, Local: peer(12, 100, 2)},
		bundle.UDPPeer{Addr: "10.0.0.53:53", Sockets: 2})
	d, ok := (&Evidence{SystemStart: start, SystemEnd: end}).SystemDelta()
	if !ok {
		t.Fatal("no delta")
	}
	peers, read := d.LocalUDPPeers()
	if !read || len(peers) != 2 || peers[0].Addr != "127.0.0.1:5300" || peers[0].CPUSeconds != 6 || peers[0].Sockets != 4 ||
		peers[1].PID != 12 || peers[1].CPUSeconds != 1.5 {
		t.Errorf("peers = %+v, read %v", peers, read)
	}
	// A bundle from before UDP peers were recorded says nothing of them.
	start.Net.UDPPeersRead = false
	if peers, read := d.LocalUDPPeers(); read || peers != nil {
		t.Errorf("old bundle: peers %+v, read %v", peers, read)
	}
}
