package evidence

import (
	"sort"

	"github.com/perfdoctor/perfdoctor/bundle"
)

// SystemDelta is what changed on the host and in the target process between
// the system snapshots at the start and end of the window. Counters in a
// snapshot are cumulative since boot; rules read these differences.
type SystemDelta struct {
	Start, End *bundle.SystemSnapshot
	Seconds    float64 // between the two snapshots
	// CPUs is the time each CPU spent in each state during the window; nil
	// when either snapshot lacks per-CPU times or the CPU set changed.
	CPUs []bundle.CPUTimes
	// NetRx and NetTx are the NET_RX and NET_TX softirqs per CPU during the window.
	NetRx, NetTx []uint64
}

// SystemDelta returns the difference between the start and end system
// snapshots, or false when there are not two snapshots in time order.
func (e *Evidence) SystemDelta() (*SystemDelta, bool) {
	s, t := e.SystemStart, e.SystemEnd
	if s == nil || t == nil || !t.Time.After(s.Time) {
		return nil, false
	}
	d := &SystemDelta{Start: s, End: t, Seconds: t.Time.Sub(s.Time).Seconds()}
	if len(s.CPUs) == len(t.CPUs) && len(s.CPUs) > 0 {
		for i := range t.CPUs {
			if s.CPUs[i].CPU != t.CPUs[i].CPU {
				d.CPUs = nil
				break
			}
			d.CPUs = append(d.CPUs, t.CPUs[i].Sub(s.CPUs[i]))
		}
	}
	d.NetRx = subCounts(s.NetRxSoftirqs, t.NetRxSoftirqs)
	d.NetTx = subCounts(s.NetTxSoftirqs, t.NetTxSoftirqs)
	return d, true
}

func subCounts(a, b []uint64) []uint64 {
	if len(a) != len(b) || len(a) == 0 {
		return nil
	}
	out := make([]uint64, len(b))
	for i := range b {
		if b[i] >= a[i] {
			out[i] = b[i] - a[i]
		}
	}
	return out
}

// Counter is the increase of a kernel network counter ("TcpExt.ListenOverflows")
// over the window, and whether both snapshots have it.
func (d *SystemDelta) Counter(name string) (uint64, bool) {
	if d.Start.Net == nil || d.End.Net == nil {
		return 0, false
	}
	a, ok1 := d.Start.Net.Counters[name]
	b, ok2 := d.End.Net.Counters[name]
	if !ok1 || !ok2 || b < a {
		return 0, false
	}
	return b - a, true
}

// CPUTotal is the sum of the per-CPU deltas.
func (d *SystemDelta) CPUTotal() bundle.CPUTimes {
	var t bundle.CPUTimes
	for _, c := range d.CPUs {
		t.User += c.User
		t.System += c.System
		t.Idle += c.Idle
		t.IOWait += c.IOWait
		t.IRQ += c.IRQ
		t.SoftIRQ += c.SoftIRQ
		t.Steal += c.Steal
	}
	t.CPU = -1
	return t
}

// Remote returns the end snapshot's entry for a remote endpoint and the
// start snapshot's (zero when absent there).
func (d *SystemDelta) Remote(addr string) (start, end bundle.RemoteEndpoint) {
	find := func(s *bundle.SystemSnapshot) bundle.RemoteEndpoint {
		if s.Net != nil {
			for _, r := range s.Net.Remotes {
				if r.Addr == addr {
					return r
				}
			}
		}
		return bundle.RemoteEndpoint{Addr: addr}
	}
	return find(d.Start), find(d.End)
}

// LocalUDPPeer is a local process at the other end of the target's
// connected UDP sockets to one endpoint, seen in both snapshots.
type LocalUDPPeer struct {
	Addr       string
	PID        int
	Comm       string
	Sockets    int     // the target's sockets to it at the end
	CPUSeconds float64 // its user and system time over the window
}

// LocalUDPPeers returns the loopback peers of the target's connected UDP
// sockets whose owner is the same process (PID and start time) in both
// snapshots, with the CPU it spent between them, busiest first. read is
// false when either snapshot did not record UDP peers (bundles from before
// they were, or no target process): then nothing is known of them.
func (d *SystemDelta) LocalUDPPeers() (peers []LocalUDPPeer, read bool) {
	if d.Start.Net == nil || d.End.Net == nil || !d.Start.Net.UDPPeersRead || !d.End.Net.UDPPeersRead {
		return nil, false
	}
	start := map[string]*bundle.PeerProcess{}
	for _, p := range d.Start.Net.UDPPeers {
		if p.Local != nil {
			start[p.Addr] = p.Local
		}
	}
	for _, p := range d.End.Net.UDPPeers {
		a, b := start[p.Addr], p.Local
		if a == nil || b == nil || a.PID != b.PID || a.StartTime != b.StartTime || b.CPUSeconds() < a.CPUSeconds() {
			continue
		}
		peers = append(peers, LocalUDPPeer{Addr: p.Addr, PID: b.PID, Comm: b.Comm, Sockets: p.Sockets, CPUSeconds: b.CPUSeconds() - a.CPUSeconds()})
	}
	sort.Slice(peers, func(i, j int) bool { return peers[i].CPUSeconds > peers[j].CPUSeconds })
	return peers, true
}
