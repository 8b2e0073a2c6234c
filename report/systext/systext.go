// Package systext summarises a window of /proc snapshots (and perf's
// stacks) the way vmstat, mpstat, ss and sysctl would: what `perfdoctor
// sys` prints above its findings, and the "summary" of its JSON.
package systext

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"

	"github.com/perfdoctor/perfdoctor/bundle"
	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/facts"
	"github.com/perfdoctor/perfdoctor/formats/perfscript"
	"github.com/perfdoctor/perfdoctor/internal/human"
)

// Summary is what sys shows before the findings; its JSON is the
// "summary" object of sys --format json.
type Summary struct {
	WindowSeconds float64            `json:"window_seconds"`
	CPUs          int                `json:"cpus"`
	LoadAvg       [3]float64         `json:"load_avg"`
	CPU           []CPUShare         `json:"cpu"` // the whole machine first (cpu -1), then each CPU
	NetRx         []uint64           `json:"net_rx_softirqs,omitempty"`
	NetTx         []uint64           `json:"net_tx_softirqs,omitempty"`
	TCPStates     map[string]int     `json:"tcp_states,omitempty"`
	Destinations  []Destination      `json:"destinations,omitempty"`
	Sysctls       *bundle.NetSysctls `json:"sysctls,omitempty"`
	Counters      map[string]uint64  `json:"counters,omitempty"` // increase over the window
	Conntrack     *bundle.Conntrack  `json:"conntrack,omitempty"`
	Process       *ProcessSummary    `json:"process,omitempty"`
	Cgroup        *bundle.CgroupInfo `json:"cgroup,omitempty"`
	Perf          string             `json:"perf,omitempty"` // what perf gave, or why not
	Errors        []string           `json:"errors,omitempty"`
}

type CPUShare struct {
	CPU                                             int     `json:"cpu"`
	User, System, SoftIRQ, IRQ, Steal, IOWait, Idle float64 `json:"-"`
}

func (c CPUShare) MarshalJSON() ([]byte, error) {
	return json.Marshal(map[string]any{"cpu": c.CPU, "us": c.User, "sy": c.System, "si": c.SoftIRQ, "irq": c.IRQ, "steal": c.Steal, "iowait": c.IOWait, "idle": c.Idle})
}

type Destination struct {
	Addr     string  `json:"addr"`
	Sockets  int     `json:"sockets"`
	TimeWait int     `json:"time_wait"`
	Rate     float64 `json:"new_per_second"`
	Ceiling  float64 `json:"ceiling_per_second"`
}

type ProcessSummary struct {
	PID            int     `json:"pid"`
	Comm           string  `json:"comm"`
	CPUCores       float64 `json:"cpu_cores"` // user+system CPU seconds per second
	SystemShare    float64 `json:"system_share"`
	RSSBytes       uint64  `json:"rss_bytes"`
	Threads        int     `json:"threads"`
	OpenFDs        int     `json:"open_fds"`
	FDLimit        uint64  `json:"fd_limit"`
	VoluntaryPS    float64 `json:"voluntary_ctxt_switches_per_second"`
	NonvoluntaryPS float64 `json:"nonvoluntary_ctxt_switches_per_second"`
}

// shownCounters are the kernel counters sys prints, in order.
var shownCounters = []string{
	"Tcp.ActiveOpens", "Tcp.PassiveOpens", "Tcp.AttemptFails", "Tcp.EstabResets", "Tcp.RetransSegs",
	"TcpExt.ListenOverflows", "TcpExt.ListenDrops", "TcpExt.SyncookiesSent", "TcpExt.TCPTimeWaitOverflow", "TcpExt.TCPBacklogDrop",
}

// Summarize reads the window's figures from the evidence's two system
// snapshots, its perf profile (perfErr says why there is none, if asked
// for) and the facts over them.
func Summarize(set *facts.Pass, perfErr error) Summary {
	d, _ := set.Evidence.SystemDelta()
	perfProf := set.Evidence.Profile(evidence.Perf)
	s := Summary{WindowSeconds: d.Seconds, CPUs: d.End.Machine.NumCPU, LoadAvg: d.End.Machine.LoadAvg,
		NetRx: d.NetRx, NetTx: d.NetTx, Errors: d.End.Errors, Cgroup: d.End.Cgroup}
	if len(d.CPUs) > 0 {
		for _, c := range append([]bundle.CPUTimes{d.CPUTotal()}, d.CPUs...) {
			tot := c.Total()
			if tot <= 0 {
				continue
			}
			s.CPU = append(s.CPU, CPUShare{CPU: c.CPU, User: c.User / tot, System: c.System / tot, SoftIRQ: c.SoftIRQ / tot,
				IRQ: c.IRQ / tot, Steal: c.Steal / tot, IOWait: c.IOWait / tot, Idle: c.Idle / tot})
		}
	}
	if n := d.End.Net; n != nil {
		s.TCPStates, s.Sysctls, s.Conntrack = n.TCPStates, &n.Sysctls, n.Conntrack
		dests := facts.Get(set, facts.TimeWait)
		for _, dst := range dests[:min(5, len(dests))] {
			s.Destinations = append(s.Destinations, Destination{Addr: dst.Addr, Sockets: dst.Held, TimeWait: dst.TimeWait, Rate: dst.Rate, Ceiling: dst.Ceiling})
		}
		s.Counters = map[string]uint64{}
		for _, c := range shownCounters {
			if v, ok := d.Counter(c); ok {
				s.Counters[c] = v
			}
		}
	}
	if p, q := d.Start.Process, d.End.Process; p != nil && q != nil && d.Seconds > 0 {
		cpu := (q.UserCPUSeconds + q.SystemCPUSeconds - p.UserCPUSeconds - p.SystemCPUSeconds)
		ps := &ProcessSummary{PID: q.PID, Comm: q.Comm, CPUCores: cpu / d.Seconds, RSSBytes: q.RSSBytes, Threads: q.Threads,
			OpenFDs: q.OpenFDs, FDLimit: q.FDLimit,
			VoluntaryPS:    float64(q.VoluntaryCtxt-p.VoluntaryCtxt) / d.Seconds,
			NonvoluntaryPS: float64(q.NonvoluntaryCtxt-p.NonvoluntaryCtxt) / d.Seconds}
		if cpu > 0 {
			ps.SystemShare = (q.SystemCPUSeconds - p.SystemCPUSeconds) / cpu
		}
		s.Process = ps
	}
	switch {
	case perfProf != nil:
		p := perfProf
		var n, k int64
		for _, smp := range p.Sample {
			n += smp.Value[0]
			if slices.ContainsFunc(smp.Location, perfscript.IsKernel) {
				k += smp.Value[0]
			}
		}
		s.Perf = fmt.Sprintf("%d samples, %s with kernel frames", n, human.Percent(float64(k)/float64(max(n, 1))))
	case perfErr != nil:
		s.Perf = "not recorded: " + perfErr.Error()
	}
	return s
}

// WriteText writes the summary as sys prints it above the findings.
func WriteText(w io.Writer, s Summary) error {
	var b strings.Builder
	fmt.Fprintf(&b, "perfdoctor sys: %.1f s window, %d CPUs, load %.2f %.2f %.2f (%.2f per CPU)\n",
		s.WindowSeconds, s.CPUs, s.LoadAvg[0], s.LoadAvg[1], s.LoadAvg[2], s.LoadAvg[0]/float64(max(s.CPUs, 1)))
	if len(s.CPU) > 0 {
		fmt.Fprintf(&b, "\nCPU      us     sy     si    irq  steal iowait   idle   NET_RX   NET_TX\n")
		for _, c := range s.CPU {
			name, rx, tx := "all", sum(s.NetRx), sum(s.NetTx)
			if c.CPU >= 0 {
				name = fmt.Sprint(c.CPU)
				rx, tx = at(s.NetRx, c.CPU), at(s.NetTx, c.CPU)
			}
			fmt.Fprintf(&b, "%-5s %5.1f%% %5.1f%% %5.1f%% %5.1f%% %5.1f%% %5.1f%% %5.1f%% %8s %8s\n", name,
				c.User*100, c.System*100, c.SoftIRQ*100, c.IRQ*100, c.Steal*100, c.IOWait*100, c.Idle*100,
				human.Number(float64(rx)), human.Number(float64(tx)))
		}
	}
	if s.TCPStates != nil {
		fmt.Fprintf(&b, "\nTCP sockets: %s\n", states(s.TCPStates))
		if sc := s.Sysctls; sc != nil {
			fmt.Fprintf(&b, "  ip_local_port_range %d-%d (%d ports): at most %.0f new connections/s per destination (TIME_WAIT 60 s)\n",
				sc.PortRangeLow, sc.PortRangeHigh, sc.EphemeralPorts(), float64(sc.EphemeralPorts())/facts.TimeWaitSeconds)
			fmt.Fprintf(&b, "  tcp_tw_reuse %d, tcp_fin_timeout %d, tcp_max_tw_buckets %d, somaxconn %d, tcp_max_syn_backlog %d\n",
				sc.TCPTWReuse, sc.TCPFinTimeout, sc.TCPMaxTWBuckets, sc.Somaxconn, sc.TCPMaxSynBacklog)
		}
		for _, dst := range s.Destinations {
			fmt.Fprintf(&b, "  to %-22s %6d sockets, %6d TIME_WAIT, ~%.0f new/s (%s of the ceiling)\n", dst.Addr, dst.Sockets, dst.TimeWait, dst.Rate, human.Percent(dst.Rate/dst.Ceiling))
		}
		var cs []string
		for _, c := range shownCounters {
			if v, ok := s.Counters[c]; ok {
				cs = append(cs, fmt.Sprintf("%s %s", strings.TrimPrefix(strings.TrimPrefix(c, "TcpExt."), "Tcp."), human.Number(float64(v))))
			}
		}
		if len(cs) > 0 {
			fmt.Fprintf(&b, "  in the window: %s\n", strings.Join(cs, ", "))
		}
	}
	if ct := s.Conntrack; ct != nil {
		fmt.Fprintf(&b, "conntrack: %d of %d entries (%s)\n", ct.Count, ct.Max, human.Percent(float64(ct.Count)/float64(max(ct.Max, 1))))
	}
	if p := s.Process; p != nil {
		fmt.Fprintf(&b, "\nprocess %d (%s): %.2f CPUs (%s system), RSS %s, %d threads, %d of %d fds, %.0f voluntary + %.0f involuntary context switches/s\n",
			p.PID, p.Comm, p.CPUCores, human.Percent(p.SystemShare), human.Bytes(p.RSSBytes), p.Threads, p.OpenFDs, p.FDLimit, p.VoluntaryPS, p.NonvoluntaryPS)
	}
	if cg := s.Cgroup; cg != nil {
		fmt.Fprintf(&b, "cgroup v%d %s: quota %s, memory %s of %s, throttled %d of %d periods\n", cg.Version, cg.Path,
			quota(cg.CPUQuotaCores), human.Bytes(cg.MemoryUsageBytes), limit(cg.MemoryLimitBytes), cg.NrThrottled, cg.NrPeriods)
	}
	if s.Perf != "" {
		fmt.Fprintf(&b, "perf: %s\n", s.Perf)
	}
	for _, e := range s.Errors {
		fmt.Fprintf(&b, "not read: %s\n", e)
	}
	b.WriteString("\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func states(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return m[keys[i]] > m[keys[j]] || (m[keys[i]] == m[keys[j]] && keys[i] < keys[j]) })
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", k, m[k])
	}
	return strings.Join(parts, ", ")
}

func sum(v []uint64) (t uint64) {
	for _, x := range v {
		t += x
	}
	return t
}

func at(v []uint64, i int) uint64 {
	if i < len(v) {
		return v[i]
	}
	return 0
}

func quota(cores float64) string {
	if cores == 0 {
		return "none"
	}
	return fmt.Sprintf("%.2g CPUs", cores)
}

func limit(b uint64) string {
	if b == 0 {
		return "no limit"
	}
	return human.Bytes(b)
}
