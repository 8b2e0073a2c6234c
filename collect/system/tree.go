package system

import (
	"fmt"
	"slices"
	"sort"

	"github.com/prometheus/procfs"

	"github.com/perfdoctor/perfdoctor/bundle"
)

// Descendants lists the processes descended from pid (its children,
// theirs, ...) now, found through each process's parent in /proc.
func Descendants(roots Roots, pid int) ([]int, error) {
	pfs, err := procfs.NewFS(roots.withDefaults().Proc)
	if err != nil {
		return nil, fmt.Errorf("descendants of %d: %w", pid, err)
	}
	stats, err := descendants(pfs, pid)
	if err != nil {
		return nil, err
	}
	out := make([]int, len(stats))
	for i, st := range stats {
		out[i] = st.PID
	}
	return out, nil
}

// descendants reads every process's stat once and walks the tree from pid
// breadth first.
func descendants(pfs procfs.FS, pid int) ([]procfs.ProcStat, error) {
	procs, err := pfs.AllProcs()
	if err != nil {
		return nil, fmt.Errorf("descendants of %d: %w", pid, err)
	}
	children := map[int][]procfs.ProcStat{}
	for _, p := range procs {
		st, err := p.Stat()
		if err != nil {
			continue // exited meanwhile
		}
		children[st.PPID] = append(children[st.PPID], st)
	}
	var out []procfs.ProcStat
	queue := []int{pid}
	seen := map[int]bool{pid: true}
	for len(queue) > 0 {
		next := queue[0]
		queue = queue[1:]
		for _, st := range children[next] {
			if !seen[st.PID] {
				seen[st.PID] = true
				out = append(out, st)
				queue = append(queue, st.PID)
			}
		}
	}
	return out, nil
}

// SnapshotTree is Snapshot with the process's descendants in Children:
// each one's CPU time, threads, context switches, descriptors and
// command line (redacted), busiest first, at most bundle.MaxChildren.
//
// The descendants' sockets count as the process's own (RemoteEndpoint.Process).
func SnapshotTree(roots Roots, pid int) (*bundle.SystemSnapshot, error) {
	if pid == 0 {
		return Snapshot(roots, pid)
	}
	roots = roots.withDefaults()
	pfs, err := procfs.NewFS(roots.Proc)
	if err != nil {
		return nil, fmt.Errorf("system snapshot: %w", err)
	}
	stats, treeErr := descendants(pfs, pid)
	snap, err := snapshot(roots, pid, stats)
	if err != nil {
		return snap, err
	}
	if treeErr != nil {
		snap.Errors = append(snap.Errors, "children: "+treeErr.Error())
		return snap, nil
	}
	cpu := func(st procfs.ProcStat) uint { return st.UTime + st.STime }
	sort.SliceStable(stats, func(i, j int) bool { return cpu(stats[i]) > cpu(stats[j]) })
	if len(stats) > bundle.MaxChildren {
		snap.MoreChildren = len(stats) - bundle.MaxChildren
		stats = stats[:bundle.MaxChildren]
	}
	ignore := func(string, error) {} // a child exiting midway is no error
	for _, st := range stats {
		proc, err := pfs.Proc(st.PID)
		if err != nil {
			continue
		}
		p := readProcess(roots, pfs, proc, false, ignore)
		if p.Comm == "" {
			continue // gone before its stat was read again
		}
		snap.Children = append(snap.Children, *p)
	}
	slices.SortStableFunc(snap.Children, func(a, b bundle.ProcessInfo) int {
		return cmpFloat(b.UserCPUSeconds+b.SystemCPUSeconds, a.UserCPUSeconds+a.SystemCPUSeconds)
	})
	return snap, nil
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
