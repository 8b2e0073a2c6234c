package system

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/google/pprof/profile"

	"github.com/perfdoctor/perfdoctor/bundle"
)

// TreeUsage is where a process tree's CPU went over a window: the named
// process itself, its descendants grouped by what they run, and the
// descendants that came and went between the snapshots.
type TreeUsage struct {
	PID     int     `json:"pid"`
	Name    string  `json:"name"` // the command line, shortened
	Seconds float64 `json:"window_seconds"`
	Cores   float64 `json:"cores"` // the process itself
	// ChildCores is its descendants' CPU, ExitedCores included: those that
	// exited in the window and were waited for (from their parents'
	// cutime and cstime).
	ChildCores  float64        `json:"children_cores"`
	ExitedCores float64        `json:"exited_children_cores,omitempty"`
	Children    int            `json:"children"` // descendants seen in either snapshot
	Groups      []ProcessGroup `json:"groups,omitempty"`
	// Samples and ChildSamples count perf's samples of the process and of
	// its descendants, when perf recorded the tree.
	Samples      int64 `json:"perf_samples,omitempty"`
	ChildSamples int64 `json:"children_perf_samples,omitempty"`
}

// ProcessGroup is the descendants running the same command line.
type ProcessGroup struct {
	Name    string  `json:"name"` // the command line, client ports removed
	PIDs    []int   `json:"pids"`
	Cores   float64 `json:"cores"`
	Threads int     `json:"threads"`  // at the end
	OpenFDs int     `json:"open_fds"` // at the end
	// VoluntaryCtxt and NonvoluntaryCtxt are the context switches in the
	// window, all threads of every member.
	VoluntaryCtxt    uint64 `json:"voluntary_ctxt_switches"`
	NonvoluntaryCtxt uint64 `json:"nonvoluntary_ctxt_switches"`
	Samples          int64  `json:"perf_samples,omitempty"`
}

// Tree computes a process tree's usage between two snapshots of it
// (SnapshotTree). It returns nil when the process had no descendants in
// either and none exited in between.
func Tree(start, end *bundle.SystemSnapshot) *TreeUsage {
	if start == nil || end == nil || start.Process == nil || end.Process == nil || start.Process.PID != end.Process.PID {
		return nil
	}
	secs := end.Time.Sub(start.Time).Seconds()
	if secs <= 0 {
		return nil
	}
	cpu := func(p bundle.ProcessInfo) float64 { return p.UserCPUSeconds + p.SystemCPUSeconds }
	u := &TreeUsage{PID: end.Process.PID, Name: shortName(*end.Process), Seconds: secs,
		Cores: max(cpu(*end.Process)-cpu(*start.Process), 0) / secs}

	groups := map[string]*ProcessGroup{}
	var childCPU float64
	gone, exited := bundle.ChildrenAcross(start, end, func(p bundle.ProcessInfo, b *bundle.ProcessInfo) {
		used := cpu(p)
		vol, invol := p.VoluntaryCtxt, p.NonvoluntaryCtxt
		if b != nil {
			used = max(used-cpu(*b), 0)
			vol, invol = sub(vol, b.VoluntaryCtxt), sub(invol, b.NonvoluntaryCtxt)
		}
		childCPU += used
		name := groupName(p)
		g := groups[name]
		if g == nil {
			g = &ProcessGroup{Name: name}
			groups[name] = g
		}
		g.PIDs = append(g.PIDs, p.PID)
		g.Cores += used / secs
		g.Threads += p.Threads
		g.OpenFDs += p.OpenFDs
		g.VoluntaryCtxt += vol
		g.NonvoluntaryCtxt += invol
	})
	u.Children = len(end.Children) + gone
	u.ExitedCores = exited / secs
	u.ChildCores = childCPU/secs + u.ExitedCores
	if u.Children == 0 && u.ExitedCores == 0 {
		return nil
	}
	for _, g := range groups {
		slices.Sort(g.PIDs)
		u.Groups = append(u.Groups, *g)
	}
	slices.SortFunc(u.Groups, func(a, b ProcessGroup) int {
		if c := cmpFloat(b.Cores, a.Cores); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	return u
}

func sub(a, b uint64) uint64 {
	if a < b {
		return 0
	}
	return a - b
}

// AddSamples counts perf's samples by process: the named one, its
// descendants in each group, and descendants forked and gone between the
// snapshots (counted with the descendants, since perf followed them from
// the tree). Samples carry their process in the "pid" number label.
func (u *TreeUsage) AddSamples(p *profile.Profile) {
	if u == nil || p == nil {
		return
	}
	group := map[int64]int{}
	for i, g := range u.Groups {
		for _, pid := range g.PIDs {
			group[int64(pid)] = i
		}
	}
	for _, s := range p.Sample {
		pids := s.NumLabel["pid"]
		if len(pids) == 0 || len(s.Value) == 0 {
			continue
		}
		switch i, ok := group[pids[0]]; {
		case pids[0] == int64(u.PID):
			u.Samples += s.Value[0]
		case ok:
			u.Groups[i].Samples += s.Value[0]
			u.ChildSamples += s.Value[0]
		default:
			u.ChildSamples += s.Value[0]
		}
	}
}

// Sentence says where the tree's work is, in one line:
//
//	pid 812 (postgres) used 0.2% of a core; its 18 descendants 1.83 cores: 1.70 in 16 processes 'postgres: bench bench 127.0.0.1 idle', ...
func (u *TreeUsage) Sentence() string {
	var b strings.Builder
	descendants := "descendants" // all exited: seen only in their parents' time
	if u.Children > 0 {
		descendants = plural(u.Children, "descendant")
	}
	fmt.Fprintf(&b, "pid %d (%s) used %s; its %s %s", u.PID, u.Name, coresText(u.Cores), descendants, coresText(u.ChildCores))
	var parts []string
	var busy []ProcessGroup // idle groups are left to the JSON
	for _, g := range u.Groups {
		if g.Cores >= 0.005 {
			busy = append(busy, g)
		}
	}
	for i, g := range busy {
		if i == 3 {
			rest := 0.0
			n := 0
			for _, g := range busy[i:] {
				rest += g.Cores
				n += len(g.PIDs)
			}
			parts = append(parts, fmt.Sprintf("%s in %s more", coresNumber(rest), plural(n, "process")))
			break
		}
		parts = append(parts, fmt.Sprintf("%s in %s '%s'", coresNumber(g.Cores), plural(len(g.PIDs), "process"), g.Name))
	}
	if u.ExitedCores >= 0.005 {
		parts = append(parts, fmt.Sprintf("%s in processes that exited", coresNumber(u.ExitedCores)))
	}
	if len(parts) > 0 {
		b.WriteString(": " + strings.Join(parts, ", "))
	}
	if all := u.Samples + u.ChildSamples; all > 0 {
		fmt.Fprintf(&b, "; perf: %.0f%% of the tree's samples in its descendants", 100*float64(u.ChildSamples)/float64(all))
	}
	return b.String()
}

// coresText is a CPU rate as people read it: "0.2% of a core" below a
// tenth, "1.83 cores" above.
func coresText(c float64) string {
	if c < 0.1 {
		return fmt.Sprintf("%.1f%% of a core", 100*c)
	}
	if c < 1.005 && c > 0.995 {
		return "1.00 core"
	}
	return fmt.Sprintf("%.2f cores", c)
}

func coresNumber(c float64) string { return fmt.Sprintf("%.2f", c) }

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	if strings.HasSuffix(what, "s") {
		return fmt.Sprintf("%d %ses", n, what)
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// clientPort is a client's port in a process title, as PostgreSQL's
// backends write it ("127.0.0.1(54321)"): it tells processes apart that
// do the same work.
var clientPort = regexp.MustCompile(`\(\d+\)`)

// groupName is a process's command line with client ports removed and
// whitespace folded, shortened.
func groupName(p bundle.ProcessInfo) string {
	s := strings.Join(strings.Fields(clientPort.ReplaceAllString(p.Cmdline, "")), " ")
	if s == "" {
		s = "[" + p.Comm + "]"
	}
	return shorten(s, 72)
}

// shortName is a process's command line for a sentence: the program's
// base name and its first arguments.
func shortName(p bundle.ProcessInfo) string {
	f := strings.Fields(p.Cmdline)
	if len(f) == 0 {
		return p.Comm
	}
	if i := strings.LastIndexByte(f[0], '/'); i >= 0 && i < len(f[0])-1 {
		f[0] = f[0][i+1:]
	}
	return shorten(strings.Join(f, " "), 48)
}

func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && s[cut]&0xC0 == 0x80 { // not inside a UTF-8 sequence
		cut--
	}
	return s[:cut] + "..."
}
