package system

import (
	"fmt"
	"net"
	"sort"
	"strconv"

	"github.com/prometheus/procfs"

	"github.com/perfdoctor/perfdoctor/bundle"
)

// udpConnected is TCP_ESTABLISHED, the state /proc/net/udp shows for a UDP
// socket connect(2)ed to one peer; an unconnected socket shows TCP_CLOSE.
const udpConnected = 0x01

// maxPeerScan bounds the processes whose descriptors are read to find who
// owns a loopback peer's socket: on a host with more, the owners not found
// by then are left unknown (and the snapshot says so).
const maxPeerScan = 4096

// udpPeers groups the target's connected UDP sockets (their inodes in own)
// by remote endpoint, most sockets first, at most bundle.MaxRemotes. For
// each peer on loopback it also returns the inodes of the namespace's
// sockets that would receive its datagrams (bound to the peer's port on its
// address or on any address), the target's own excepted: their owner is the
// local process at the other end.
func udpPeers(socks []tcpSocket, own map[uint64]bool) (peers []bundle.UDPPeer, ends map[string]map[uint64]bool) {
	byAddr := map[string]*bundle.UDPPeer{}
	for _, s := range socks {
		if s.state != udpConnected || s.rport == 0 || s.inode == 0 || !own[s.inode] {
			continue
		}
		key := endpoint(s.remote, s.rport)
		p := byAddr[key]
		if p == nil {
			p = &bundle.UDPPeer{Addr: key}
			byAddr[key] = p
		}
		p.Sockets++
	}
	for _, p := range byAddr {
		peers = append(peers, *p)
	}
	sort.Slice(peers, func(i, j int) bool {
		if peers[i].Sockets != peers[j].Sockets {
			return peers[i].Sockets > peers[j].Sockets
		}
		return peers[i].Addr < peers[j].Addr
	})
	peers = peers[:min(len(peers), bundle.MaxRemotes)]
	ends = map[string]map[uint64]bool{}
	for _, p := range peers {
		host, port, err := net.SplitHostPort(p.Addr)
		ip := net.ParseIP(host)
		if err != nil || ip == nil || !ip.IsLoopback() {
			continue
		}
		for _, s := range socks {
			if s.inode == 0 || own[s.inode] || endpointPort(port) != s.lport {
				continue
			}
			if s.local.IsUnspecified() || s.local.Equal(ip) {
				if ends[p.Addr] == nil {
					ends[p.Addr] = map[uint64]bool{}
				}
				ends[p.Addr][s.inode] = true
			}
		}
	}
	return peers, ends
}

func endpointPort(s string) uint64 {
	v, err := strconv.ParseUint(s, 10, 16)
	if err != nil {
		return 1 << 32 // no socket has it
	}
	return v
}

// readUDPPeers records the target's connected UDP sockets' peers and, for
// those on loopback, the local process that owns the other end: its PID,
// name and CPU time now, so two snapshots give the CPU it spent answering
// over the window. The owners are found by socket inode in the processes'
// descriptors, only when there is a loopback peer, at most maxPeerScan
// processes.
func readUDPPeers(procRoot string, pfs procfs.FS, n *bundle.NetInfo, own map[uint64]bool, fail func(string, error)) {
	peers, ends := udpPeers(readSocketTables(procRoot, "udp", fail), own)
	n.UDPPeersRead = true
	n.UDPPeers = peers
	if len(ends) == 0 {
		return
	}
	owner := map[uint64]int{} // inode -> index in peers
	for i, p := range peers {
		for ino := range ends[p.Addr] {
			owner[ino] = i
		}
	}
	procs, err := pfs.AllProcs()
	if err != nil {
		fail("udp peer owners", err)
		return
	}
	left := len(ends)
	for k, p := range procs {
		if left == 0 {
			break
		}
		if k == maxPeerScan {
			fail("udp peer owners", fmt.Errorf("stopped after %d processes with %d loopback peers' owners not found", maxPeerScan, left))
			break
		}
		// Other users' descriptors are unreadable without privileges;
		// their processes are not candidates.
		targets, err := p.FileDescriptorTargets()
		if err != nil {
			continue
		}
		for _, t := range targets {
			ino, ok := socketInode(t)
			if !ok {
				continue
			}
			i, ok := owner[ino]
			if !ok || peers[i].Local != nil {
				continue
			}
			if lp := readPeer(p); lp != nil {
				peers[i].Local = lp
				left--
			}
		}
	}
}

// readPeer reads a peer process's name and CPU time, nil when it is gone.
func readPeer(p procfs.Proc) *bundle.PeerProcess {
	st, err := p.Stat()
	if err != nil {
		return nil
	}
	lp := &bundle.PeerProcess{PID: p.PID, Comm: st.Comm,
		UserCPUSeconds: float64(st.UTime) / userHZ, SystemCPUSeconds: float64(st.STime) / userHZ}
	if start, err := st.StartTime(); err == nil {
		lp.StartTime = start
	}
	return lp
}
