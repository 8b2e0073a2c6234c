package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/google/pprof/profile"
	"github.com/spf13/cobra"

	"github.com/perfdoctor/perfdoctor/bundle"
	"github.com/perfdoctor/perfdoctor/collect"
	"github.com/perfdoctor/perfdoctor/collect/perf"
	"github.com/perfdoctor/perfdoctor/collect/system"
	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/evidence/perfscript"
	"github.com/perfdoctor/perfdoctor/internal/progress"
	"github.com/perfdoctor/perfdoctor/report"
	"github.com/perfdoctor/perfdoctor/rules"
	"github.com/perfdoctor/perfdoctor/rules/catalog"
	"github.com/perfdoctor/perfdoctor/rules/portexhaust"
)

func (a *app) sysCommand() *cobra.Command {
	var (
		pid      int
		duration time.Duration
		withPerf bool
		format   string
		out      string
		roots    system.Roots
	)
	cmd := &cobra.Command{
		Use:   "sys",
		Short: "Check this machine (and a process) the way vmstat, mpstat, ss, sysctl and perf top would",
		Long: `Sys snapshots /proc at the start and end of a window and reports the
differences: per-CPU user/system/softirq/irq/steal/iowait time, NET_RX and
NET_TX soft interrupts per CPU, load against cores, TCP sockets by state in
total and per remote endpoint with the ephemeral-port ceiling, the network
sysctls, listen queue overflows, retransmits and SYN cookies, conntrack, and
with --pid the process's descriptors, threads, memory, context switches and
cgroup quota, throttling and memory. Then it runs the operating system and
network rules. --perf also records stacks with kernel frames through perf.`,
		Example: `  perfdoctor sys
  perfdoctor sys --pid 4242 -d 30s --perf
  perfdoctor sys -d 10s -o ./host-bundle && perfdoctor diagnose ./host-bundle`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if format != "text" && format != "json" {
				return usageError{fmt.Errorf("unknown --format %q (want text or json)", format)}
			}
			if duration < 100*time.Millisecond || duration > collect.MaxDuration {
				return usageError{fmt.Errorf("--duration %s out of range (100ms to %s)", duration, collect.MaxDuration)}
			}
			if out != "" {
				if ents, err := os.ReadDir(out); err == nil && len(ents) > 0 {
					return fmt.Errorf("output directory %s already exists and is not empty", out)
				}
			}
			line := progress.New(os.Stderr)
			res, err := observeSystem(cmd.Context(), sysOptions{pid: pid, duration: duration, perf: withPerf, roots: roots, progress: line, log: a.log})
			line.Clear()
			if err != nil {
				return err
			}
			if out != "" {
				if err := res.writeBundle(out); err != nil {
					return err
				}
				fmt.Fprintf(a.stderr, "bundle written to %s\n", out)
			}
			return res.write(a.stdout, format)
		},
	}
	cmd.Flags().IntVar(&pid, "pid", 0, "also observe this process: descriptors, threads, memory, cgroup")
	cmd.Flags().DurationVarP(&duration, "duration", "d", 10*time.Second, "window between the two snapshots")
	cmd.Flags().BoolVar(&withPerf, "perf", false, "record stacks with kernel frames through perf (the process with --pid, else every CPU)")
	cmd.Flags().StringVarP(&format, "format", "f", "text", "output format: text or json")
	cmd.Flags().StringVarP(&out, "output", "o", "", "also write the snapshots (and perf profile) as a bundle directory for diagnose")
	cmd.Flags().StringVar(&roots.Proc, "proc", "", "procfs root (default /proc)")
	cmd.Flags().StringVar(&roots.Sys, "sysfs", "", "sysfs root (default /sys)")
	cmd.Flags().MarkHidden("proc")
	cmd.Flags().MarkHidden("sysfs")
	return cmd
}

type sysOptions struct {
	pid         int
	duration    time.Duration
	perf        bool
	sourceLines bool // ask perf for file:line (native services built with -g)
	roots       system.Roots
	progress    *progress.Line
	log         *slog.Logger
}

// sysResult is one observation window and what the rules made of it.
type sysResult struct {
	ev      *evidence.Evidence
	delta   *evidence.SystemDelta
	perfErr error // why there is no perf profile, when one was asked for
	perfRan bool
	started time.Time
	dur     time.Duration
	pid     int
	rep     *report.Report
}

func observeSystem(ctx context.Context, o sysOptions) (*sysResult, error) {
	started := time.Now()
	start, err := system.Snapshot(o.roots, o.pid)
	if err != nil {
		return nil, err
	}
	var (
		wg       sync.WaitGroup
		perfProf *profile.Profile
		perfErr  error
	)
	if o.perf {
		wg.Go(func() {
			perfProf, perfErr = perf.Record(ctx, perf.Options{PID: o.pid, Duration: o.duration, SourceLines: o.sourceLines, Logger: o.log})
		})
	}
	o.progress.Update("observing for %s", o.duration)
	t := time.NewTimer(o.duration)
	select {
	case <-t.C:
	case <-ctx.Done():
		t.Stop()
		wg.Wait()
		return nil, fmt.Errorf("sys interrupted: %w", ctx.Err())
	}
	end, err := system.Snapshot(o.roots, o.pid)
	if err != nil {
		return nil, err
	}
	wg.Wait()
	ev := evidence.New("/proc")
	ev.SystemStart, ev.SystemEnd = start, end
	if perfProf != nil {
		ev.Profiles[evidence.Perf] = perfProf
	}
	delta, ok := ev.SystemDelta()
	if !ok {
		return nil, errors.New("the two system snapshots are not in time order")
	}
	res := &sysResult{ev: ev, delta: delta, perfErr: perfErr, perfRan: o.perf, started: started, dur: o.duration, pid: o.pid}
	if perfErr != nil {
		o.log.Warn("perf unavailable", "err", perfErr)
	}
	res.rep = report.New("perfdoctor "+version, ev, rules.Run(ev, systemRules()))
	return res, nil
}

// systemRules are the rules that read only /proc and perf evidence.
func systemRules() []*rules.Rule {
	var out []*rules.Rule
	for _, r := range catalog.All() {
		if len(r.Needs) > 0 && !slices.ContainsFunc(r.Needs, func(in rules.Input) bool {
			return in != rules.Host && in != rules.System && in != rules.Perf
		}) {
			out = append(out, r)
		}
	}
	return out
}

// writeBundle saves the window as a bundle that diagnose reads.
func (r *sysResult) writeBundle(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("creating %s: %w", dir, err)
	}
	target := "this host"
	if r.pid != 0 {
		target = fmt.Sprintf("pid %d", r.pid)
	}
	m := &bundle.Manifest{FormatVersion: bundle.FormatVersion, Tool: "perfdoctor " + version + " sys", Target: target,
		Start: r.started, End: r.delta.End.Time, Duration: bundle.Duration(r.dur), PID: r.pid}
	add := func(name, file string, write func(path string) error) {
		it := bundle.Item{Name: name, File: file, Status: bundle.StatusOK}
		if err := write(filepath.Join(dir, file)); err != nil {
			it.Status, it.Error, it.File = bundle.StatusFailed, err.Error(), ""
		} else if st, err := os.Stat(filepath.Join(dir, file)); err == nil {
			it.Bytes = st.Size()
		}
		m.Items = append(m.Items, it)
	}
	add("system-start", bundle.SystemStartFile, func(p string) error { return bundle.WriteJSONAtomic(p, r.delta.Start) })
	add("system-end", bundle.SystemEndFile, func(p string) error { return bundle.WriteJSONAtomic(p, r.delta.End) })
	if r.perfRan {
		if p := r.ev.Profiles[evidence.Perf]; p != nil {
			add("perf", bundle.PerfFile, func(path string) error { _, err := bundle.WriteProfile(path, p); return err })
		} else {
			m.Items = append(m.Items, bundle.Item{Name: "perf", Status: bundle.StatusFailed, Error: r.perfErr.Error()})
		}
	}
	m.Partial = len(m.Failed()) > 0
	return bundle.WriteJSONAtomic(filepath.Join(dir, bundle.ManifestFile), m)
}

// sysSummary is what sys shows before the findings; its JSON is the
// "summary" object of sys --format json.
type sysSummary struct {
	WindowSeconds float64            `json:"window_seconds"`
	CPUs          int                `json:"cpus"`
	LoadAvg       [3]float64         `json:"load_avg"`
	CPU           []cpuShare         `json:"cpu"` // the whole machine first (cpu -1), then each CPU
	NetRx         []uint64           `json:"net_rx_softirqs,omitempty"`
	NetTx         []uint64           `json:"net_tx_softirqs,omitempty"`
	TCPStates     map[string]int     `json:"tcp_states,omitempty"`
	Destinations  []destination      `json:"destinations,omitempty"`
	Sysctls       *bundle.NetSysctls `json:"sysctls,omitempty"`
	Counters      map[string]uint64  `json:"counters,omitempty"` // increase over the window
	Conntrack     *bundle.Conntrack  `json:"conntrack,omitempty"`
	Process       *processSummary    `json:"process,omitempty"`
	Cgroup        *bundle.CgroupInfo `json:"cgroup,omitempty"`
	Perf          string             `json:"perf,omitempty"` // what perf gave, or why not
	Errors        []string           `json:"errors,omitempty"`
}

type cpuShare struct {
	CPU                                             int     `json:"cpu"`
	User, System, SoftIRQ, IRQ, Steal, IOWait, Idle float64 `json:"-"`
}

func (c cpuShare) MarshalJSON() ([]byte, error) {
	return json.Marshal(map[string]any{"cpu": c.CPU, "us": c.User, "sy": c.System, "si": c.SoftIRQ, "irq": c.IRQ, "steal": c.Steal, "iowait": c.IOWait, "idle": c.Idle})
}

type destination struct {
	Addr     string  `json:"addr"`
	Sockets  int     `json:"sockets"`
	TimeWait int     `json:"time_wait"`
	Rate     float64 `json:"new_per_second"`
	Ceiling  float64 `json:"ceiling_per_second"`
}

type processSummary struct {
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

func (r *sysResult) summary() sysSummary {
	d := r.delta
	s := sysSummary{WindowSeconds: d.Seconds, CPUs: d.End.Machine.NumCPU, LoadAvg: d.End.Machine.LoadAvg,
		NetRx: d.NetRx, NetTx: d.NetTx, Errors: d.End.Errors, Cgroup: d.End.Cgroup}
	if len(d.CPUs) > 0 {
		for _, c := range append([]bundle.CPUTimes{d.CPUTotal()}, d.CPUs...) {
			tot := c.Total()
			if tot <= 0 {
				continue
			}
			s.CPU = append(s.CPU, cpuShare{CPU: c.CPU, User: c.User / tot, System: c.System / tot, SoftIRQ: c.SoftIRQ / tot,
				IRQ: c.IRQ / tot, Steal: c.Steal / tot, IOWait: c.IOWait / tot, Idle: c.Idle / tot})
		}
	}
	if n := d.End.Net; n != nil {
		s.TCPStates, s.Sysctls, s.Conntrack = n.TCPStates, &n.Sysctls, n.Conntrack
		dests := portexhaust.Destinations(d)
		for _, dst := range dests[:min(5, len(dests))] {
			s.Destinations = append(s.Destinations, destination{Addr: dst.Addr, Sockets: dst.Held, TimeWait: dst.TimeWait, Rate: dst.Rate, Ceiling: dst.Ceiling})
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
		ps := &processSummary{PID: q.PID, Comm: q.Comm, CPUCores: cpu / d.Seconds, RSSBytes: q.RSSBytes, Threads: q.Threads,
			OpenFDs: q.OpenFDs, FDLimit: q.FDLimit,
			VoluntaryPS:    float64(q.VoluntaryCtxt-p.VoluntaryCtxt) / d.Seconds,
			NonvoluntaryPS: float64(q.NonvoluntaryCtxt-p.NonvoluntaryCtxt) / d.Seconds}
		if cpu > 0 {
			ps.SystemShare = (q.SystemCPUSeconds - p.SystemCPUSeconds) / cpu
		}
		s.Process = ps
	}
	switch {
	case r.ev.Profiles[evidence.Perf] != nil:
		p := r.ev.Profiles[evidence.Perf]
		var n, k int64
		for _, smp := range p.Sample {
			n += smp.Value[0]
			if slices.ContainsFunc(smp.Location, perfscript.IsKernel) {
				k += smp.Value[0]
			}
		}
		s.Perf = fmt.Sprintf("%d samples, %s with kernel frames", n, rules.Percent(float64(k)/float64(max(n, 1))))
	case r.perfErr != nil:
		s.Perf = "not recorded: " + r.perfErr.Error()
	}
	return s
}

func (r *sysResult) write(w io.Writer, format string) error {
	s := r.summary()
	if format == "json" {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(struct {
			Summary sysSummary     `json:"summary"`
			Report  *report.Report `json:"report"`
		}{s, r.rep})
	}
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
				rules.HumanNumber(float64(rx)), rules.HumanNumber(float64(tx)))
		}
	}
	if s.TCPStates != nil {
		fmt.Fprintf(&b, "\nTCP sockets: %s\n", states(s.TCPStates))
		if sc := s.Sysctls; sc != nil {
			fmt.Fprintf(&b, "  ip_local_port_range %d-%d (%d ports): at most %.0f new connections/s per destination (TIME_WAIT 60 s)\n",
				sc.PortRangeLow, sc.PortRangeHigh, sc.EphemeralPorts(), float64(sc.EphemeralPorts())/portexhaust.TimeWaitSeconds)
			fmt.Fprintf(&b, "  tcp_tw_reuse %d, tcp_fin_timeout %d, tcp_max_tw_buckets %d, somaxconn %d, tcp_max_syn_backlog %d\n",
				sc.TCPTWReuse, sc.TCPFinTimeout, sc.TCPMaxTWBuckets, sc.Somaxconn, sc.TCPMaxSynBacklog)
		}
		for _, dst := range s.Destinations {
			fmt.Fprintf(&b, "  to %-22s %6d sockets, %6d TIME_WAIT, ~%.0f new/s (%s of the ceiling)\n", dst.Addr, dst.Sockets, dst.TimeWait, dst.Rate, rules.Percent(dst.Rate/dst.Ceiling))
		}
		var cs []string
		for _, c := range shownCounters {
			if v, ok := s.Counters[c]; ok {
				cs = append(cs, fmt.Sprintf("%s %s", strings.TrimPrefix(strings.TrimPrefix(c, "TcpExt."), "Tcp."), rules.HumanNumber(float64(v))))
			}
		}
		if len(cs) > 0 {
			fmt.Fprintf(&b, "  in the window: %s\n", strings.Join(cs, ", "))
		}
	}
	if ct := s.Conntrack; ct != nil {
		fmt.Fprintf(&b, "conntrack: %d of %d entries (%s)\n", ct.Count, ct.Max, rules.Percent(float64(ct.Count)/float64(max(ct.Max, 1))))
	}
	if p := s.Process; p != nil {
		fmt.Fprintf(&b, "\nprocess %d (%s): %.2f CPUs (%s system), RSS %s, %d threads, %d of %d fds, %.0f voluntary + %.0f involuntary context switches/s\n",
			p.PID, p.Comm, p.CPUCores, rules.Percent(p.SystemShare), rules.HumanBytes(p.RSSBytes), p.Threads, p.OpenFDs, p.FDLimit, p.VoluntaryPS, p.NonvoluntaryPS)
	}
	if cg := s.Cgroup; cg != nil {
		fmt.Fprintf(&b, "cgroup v%d %s: quota %s, memory %s of %s, throttled %d of %d periods\n", cg.Version, cg.Path,
			quota(cg.CPUQuotaCores), rules.HumanBytes(cg.MemoryUsageBytes), limit(cg.MemoryLimitBytes), cg.NrThrottled, cg.NrPeriods)
	}
	if s.Perf != "" {
		fmt.Fprintf(&b, "perf: %s\n", s.Perf)
	}
	for _, e := range s.Errors {
		fmt.Fprintf(&b, "not read: %s\n", e)
	}
	b.WriteString("\n")
	if _, err := io.WriteString(w, b.String()); err != nil {
		return err
	}
	return report.WriteText(w, r.rep)
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
	return rules.HumanBytes(b)
}
