package system

import (
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"github.com/prometheus/procfs"

	"github.com/perfdoctor/perfdoctor/bundle"
)

// tcpStateNames are the kernel's TCP states (include/net/tcp_states.h) by number.
var tcpStateNames = map[uint64]string{
	0x01: "ESTABLISHED", 0x02: "SYN_SENT", 0x03: "SYN_RECV", 0x04: "FIN_WAIT1",
	0x05: "FIN_WAIT2", 0x06: "TIME_WAIT", 0x07: "CLOSE", 0x08: "CLOSE_WAIT",
	0x09: "LAST_ACK", 0x0A: "LISTEN", 0x0B: "CLOSING", 0x0C: "NEW_SYN_RECV",
}

const (
	tcpTimeWait   = 0x06
	timerTimeWait = 3
)

// readCPUs reads per-CPU times from /proc/stat, sorted by CPU number.
func readCPUs(st procfs.Stat) []bundle.CPUTimes {
	out := make([]bundle.CPUTimes, 0, len(st.CPU))
	for n, c := range st.CPU {
		out = append(out, bundle.CPUTimes{CPU: int(n), User: c.User + c.Nice, System: c.System, Idle: c.Idle,
			IOWait: c.Iowait, IRQ: c.IRQ, SoftIRQ: c.SoftIRQ, Steal: c.Steal})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].CPU < out[j].CPU })
	return out
}

// readNet reads TCP sockets (and, for a target, its connected UDP sockets'
// peers) and counters in the network namespace of
// process ns (the target, or perfdoctor itself standing in for the host),
// and the settings. For a target (target set) its sockets are marked, with
// those of its descendants in tree: a multi-process server's connections
// are its workers' (Apache's children, PostgreSQL's backends).
func readNet(roots Roots, pfs procfs.FS, ns procfs.Proc, target bool, tree []procfs.ProcStat, fail func(string, error)) *bundle.NetInfo {
	n := &bundle.NetInfo{Sysctls: readSysctls(pfs, fail)}
	var own map[uint64]bool
	if target {
		own = socketInodes(ns, fail)
		for _, st := range tree {
			p, err := pfs.Proc(st.PID)
			if err != nil {
				continue // exited since the tree was read
			}
			// A descendant exiting midway is no error: its sockets are gone.
			for ino := range socketInodes(p, func(string, error) {}) {
				if own != nil {
					own[ino] = true
				}
			}
		}
	}
	// /proc/PID/net is that process's namespace; /proc/net only ours.
	nsRoot := filepath.Join(roots.Proc, strconv.Itoa(ns.PID))
	readSockets(nsRoot, n, own, fail)
	if own != nil {
		readUDPPeers(nsRoot, pfs, n, own, fail)
	}
	n.Counters = map[string]uint64{}
	if st, err := ns.Snmp(); err != nil {
		fail("net/snmp", err)
	} else {
		addCounters(n.Counters, "Tcp", st.Tcp)
	}
	if st, err := ns.Netstat(); err != nil {
		fail("net/netstat", err)
	} else {
		addCounters(n.Counters, "TcpExt", st.TcpExt)
	}
	n.Conntrack = readConntrack(pfs, fail)
	return n
}

// addCounters copies the counters a procfs struct of *float64 fields holds
// (nil when the kernel does not have them) under prefix.Name.
func addCounters(into map[string]uint64, prefix string, v any) {
	rv := reflect.ValueOf(v)
	for i := range rv.NumField() {
		f := rv.Field(i)
		if p, ok := f.Interface().(*float64); ok && p != nil && *p >= 0 {
			into[prefix+"."+rv.Type().Field(i).Name] = uint64(*p)
		}
	}
}

func readSysctls(pfs procfs.FS, fail func(string, error)) bundle.NetSysctls {
	var s bundle.NetSysctls
	for name, dst := range map[string][]*int{
		"net.ipv4.ip_local_port_range": {&s.PortRangeLow, &s.PortRangeHigh},
		"net.ipv4.tcp_fin_timeout":     {&s.TCPFinTimeout},
		"net.ipv4.tcp_tw_reuse":        {&s.TCPTWReuse},
		"net.ipv4.tcp_max_tw_buckets":  {&s.TCPMaxTWBuckets},
		"net.core.somaxconn":           {&s.Somaxconn},
		"net.ipv4.tcp_max_syn_backlog": {&s.TCPMaxSynBacklog},
	} {
		vals, err := pfs.SysctlInts(name)
		if err != nil {
			fail(name, err)
			continue
		}
		for i := range min(len(vals), len(dst)) {
			*dst[i] = vals[i]
		}
	}
	return s
}

// socketInodes is the set of socket inodes among p's open files, or nil
// when its descriptors cannot be read.
func socketInodes(p procfs.Proc, fail func(string, error)) map[uint64]bool {
	targets, err := p.FileDescriptorTargets()
	if err != nil {
		fail("process sockets", err)
		return nil
	}
	own := map[uint64]bool{}
	for _, t := range targets {
		if ino, ok := socketInode(t); ok {
			own[ino] = true
		}
	}
	return own
}

// socketInode reads a descriptor's link "socket:[12345]".
func socketInode(target string) (uint64, bool) {
	v, ok := strings.CutPrefix(target, "socket:[")
	if !ok {
		return 0, false
	}
	ino, err := strconv.ParseUint(strings.TrimSuffix(v, "]"), 10, 64)
	return ino, err == nil
}

// readSocketTables reads the namespace's socket table for proto ("tcp",
// "udp") and its IPv6 twin, which is absent without IPv6.
func readSocketTables(procRoot, proto string, fail func(string, error)) []tcpSocket {
	var socks []tcpSocket
	for _, name := range []string{"net/" + proto, "net/" + proto + "6"} {
		f, err := os.Open(filepath.Join(procRoot, name))
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) || name == "net/"+proto {
				fail(name, err)
			}
			continue
		}
		err = parseSockets(f, func(s tcpSocket) { socks = append(socks, s) })
		f.Close()
		if err != nil {
			fail(name, err)
		}
	}
	return socks
}

// readSockets counts the namespace's TCP sockets by state, remote endpoint
// and listener; own, when not nil, holds the target process's socket
// inodes, so each remote endpoint also says how many of its sockets are the
// target's.
func readSockets(procRoot string, n *bundle.NetInfo, own map[uint64]bool, fail func(string, error)) {
	socks := readSocketTables(procRoot, "tcp", fail)
	n.TimeWaitAges = true
	n.ProcessSockets = own != nil
	n.TCPStates = map[string]int{}
	listening := map[uint64]bool{}
	for _, l := range socks {
		if l.state == tcpListen {
			listening[l.lport] = true
			n.Listeners = append(n.Listeners, bundle.Listener{Addr: endpoint(l.local, l.lport), Queue: l.rxQueue, Backlog: l.txQueue,
				Process: l.inode != 0 && own[l.inode]})
		}
	}
	remotes := map[string]*bundle.RemoteEndpoint{}
	for _, l := range socks {
		state := tcpStateNames[l.state]
		if state == "" {
			state = "UNKNOWN"
		}
		n.TCPStates[state]++
		// Remotes are the destinations of outbound connections: a socket on
		// a listening port is a client's connection to us.
		if l.state == tcpListen || listening[l.lport] {
			continue
		}
		key := endpoint(l.remote, l.rport)
		r := remotes[key]
		if r == nil {
			r = &bundle.RemoteEndpoint{Addr: key, States: map[string]int{}}
			remotes[key] = r
		}
		r.Total++
		r.States[state]++
		if own[l.inode] && l.inode != 0 {
			r.Process++
		}
		if l.state == tcpTimeWait && l.timer == timerTimeWait && l.expires+bundle.RecentSeconds*userHZ >= 60*userHZ {
			r.RecentTimeWait++
		}
	}
	for _, r := range remotes {
		n.Remotes = append(n.Remotes, *r)
	}
	n.Remotes = keepRemotes(n.Remotes, bundle.MaxRemotes)
	sort.Slice(n.Listeners, func(i, j int) bool { return n.Listeners[i].Addr < n.Listeners[j].Addr })
	n.Listeners = n.Listeners[:min(len(n.Listeners), bundle.MaxRemotes)]
}

// keepRemotes bounds remotes at most, busiest first, keeping every endpoint
// the target holds a socket to before the host's others: on a busy host
// other programs' TIME_WAIT storms would otherwise push the target's own
// backend connections out of the snapshot.
func keepRemotes(remotes []bundle.RemoteEndpoint, most int) []bundle.RemoteEndpoint {
	busiest := func(a, b bundle.RemoteEndpoint) bool {
		if a.Total != b.Total {
			return a.Total > b.Total
		}
		return a.Addr < b.Addr
	}
	sort.Slice(remotes, func(i, j int) bool {
		a, b := remotes[i], remotes[j]
		if (a.Process > 0) != (b.Process > 0) {
			return a.Process > 0
		}
		return busiest(a, b)
	})
	remotes = remotes[:min(len(remotes), most)]
	sort.Slice(remotes, func(i, j int) bool { return busiest(remotes[i], remotes[j]) })
	return remotes
}

func endpoint(ip net.IP, port uint64) string {
	if v4 := ip.To4(); v4 != nil { // IPv4-mapped IPv6 counts with IPv4
		ip = v4
	}
	return net.JoinHostPort(ip.String(), strconv.FormatUint(port, 10))
}

// readConntrack returns nil when netfilter connection tracking is not loaded.
func readConntrack(pfs procfs.FS, fail func(string, error)) *bundle.Conntrack {
	count, err := pfs.SysctlInts("net.netfilter.nf_conntrack_count")
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			fail("conntrack", err)
		}
		return nil
	}
	maxv, err := pfs.SysctlInts("net.netfilter.nf_conntrack_max")
	if err != nil || len(count) != 1 || len(maxv) != 1 {
		fail("conntrack", errors.New("nf_conntrack_count or nf_conntrack_max unreadable"))
		return nil
	}
	ct := &bundle.Conntrack{Count: uint64(max(count[0], 0)), Max: uint64(max(maxv[0], 0))}
	if stats, err := pfs.ConntrackStat(); err == nil {
		for _, s := range stats {
			ct.Drops += s.Drop
			ct.EarlyDrops += s.EarlyDrop
			ct.InsertFailed += s.InsertFailed
		}
	}
	return ct
}
