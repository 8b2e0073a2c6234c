package report

import (
	"slices"

	"github.com/google/pprof/profile"

	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/facts"
)

// MinFlameShare is the share of a profile's total below which a flame graph
// node is dropped from the HTML report: 0.05%, about a pixel on a wide
// screen. It keeps a 100k-stack profile to a few thousand boxes.
const MinFlameShare = 0.0005

// flameTree is a profile's stacks merged by function name into a call tree,
// encoded compactly for the page's script. Nodes are in preorder (a parent
// before its children, siblings by descending value), root first, and
// Nodes holds flameStride numbers per node.
type flameTree struct {
	Kind   string   `json:"kind"`  // evidence kind: cpu, allocs, ...
	Label  string   `json:"label"` // tab title
	Type   string   `json:"type"`  // sample type: cpu, alloc_space, ...
	Unit   string   `json:"unit"`  // nanoseconds, bytes, count
	Names  []string `json:"names"`
	Stride int      `json:"stride"`
	// Nodes: name index, parent index (-1 for the root), then per side
	// (one side; two for a diff, before then after) total and self value.
	Nodes     []int64 `json:"nodes"`
	Totals    []int64 `json:"totals"` // root total per side
	Stacks    int     `json:"stacks"` // distinct stacks read
	Kept      int     `json:"kept"`   // nodes kept
	Pruned    int     `json:"pruned"` // nodes dropped under MinShare
	MinShare  float64 `json:"min_share"`
	MaxDepth  int     `json:"max_depth"`
	Truncated bool    `json:"truncated,omitempty"`
}

// flameView names the tab of a profile kind (its sample type is
// evidence.ShownSampleType's).
type flameView struct {
	kind  evidence.Kind
	label string
}

// flameViews lists the tabs in display order.
var flameViews = []flameView{
	{evidence.CPU, "CPU"},
	{evidence.Allocs, "Allocations (bytes)"},
	{evidence.Heap, "Heap in use"},
	{evidence.Mutex, "Mutex wait"},
	{evidence.Block, "Blocking"},
	{evidence.Goroutine, "Goroutines"},
}

// stackSet is one or two profiles' samples as sequences of interned
// function names, root first, each tagged with its side.
type stackSet struct {
	names  []string
	ids    map[string]int32
	seqs   [][]int32
	side   []int8
	values []int64
	totals []int64
	typ    string
	unit   string
}

func newStackSet(sides int) *stackSet {
	return &stackSet{ids: map[string]int32{}, totals: make([]int64, sides)}
}

// add appends the samples of st as side s.
func (ss *stackSet) add(st *evidence.Stacks, s int8) {
	if st == nil {
		return
	}
	if ss.typ == "" {
		ss.typ, ss.unit = st.Type, st.Unit
	}
	frameName := make([]int32, len(st.Frames))
	for i, f := range st.Frames {
		id, ok := ss.ids[f.Func]
		if !ok {
			id = int32(len(ss.names))
			ss.ids[f.Func] = id
			ss.names = append(ss.names, f.Func)
		}
		frameName[i] = id
	}
	n := 0
	for _, sm := range st.Samples {
		n += len(sm.Frames)
	}
	backing := make([]int32, 0, n)
	for _, sm := range st.Samples {
		if sm.Value <= 0 {
			continue
		}
		start := len(backing)
		for i := len(sm.Frames) - 1; i >= 0; i-- { // root first
			backing = append(backing, frameName[sm.Frames[i]])
		}
		ss.seqs = append(ss.seqs, backing[start:len(backing):len(backing)])
		ss.side = append(ss.side, s)
		ss.values = append(ss.values, sm.Value)
		ss.totals[s] += sm.Value
	}
}

// rawTree is the merged call tree before pruning: preorder, parents first.
type rawTree struct {
	name   []int32
	parent []int32
	depth  []int32
	total  [][]int64 // [side][node]
	self   [][]int64
}

// build merges identical prefixes. Sorting the sequences puts every shared
// prefix in one run, so the tree is built in one pass with no maps, in
// preorder, in memory proportional to the distinct prefixes.
func (ss *stackSet) build() *rawTree {
	sides := len(ss.totals)
	order := make([]int, len(ss.seqs))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return slices.Compare(ss.seqs[a], ss.seqs[b]) })
	t := &rawTree{total: make([][]int64, sides), self: make([][]int64, sides)}
	addNode := func(name, parent, depth int32) int32 {
		t.name = append(t.name, name)
		t.parent = append(t.parent, parent)
		t.depth = append(t.depth, depth)
		for s := range sides {
			t.total[s] = append(t.total[s], 0)
			t.self[s] = append(t.self[s], 0)
		}
		return int32(len(t.name) - 1)
	}
	addNode(-1, -1, 0)
	path := []int32{0} // path[d] is the node at depth d of the previous sequence
	var prev []int32
	for _, i := range order {
		seq, s, v := ss.seqs[i], ss.side[i], ss.values[i]
		common := 0
		for common < len(seq) && common < len(prev) && seq[common] == prev[common] {
			common++
		}
		path = path[:common+1]
		for d := common; d < len(seq); d++ {
			path = append(path, addNode(seq[d], path[d], int32(d+1)))
		}
		for _, n := range path {
			t.total[s][n] += v
		}
		t.self[s][path[len(path)-1]] += v
		prev = seq
	}
	return t
}

// maxFlameNodes bounds what one tab may hold whatever the profile: with
// the default share that is never reached (at most 2,000 nodes a level).
const maxFlameNodes = 200_000

// encode prunes nodes under minShare of the largest side's total (a node is
// kept if it reaches the bar on either side) and writes the compact form.
func (t *rawTree) encode(ss *stackSet, minShare float64) *flameTree {
	sides := len(ss.totals)
	n := len(t.name)
	// Children lists from the parent links; preorder means each node's
	// children appear in order after it.
	childStart := make([]int32, n+1)
	for i := 1; i < n; i++ {
		childStart[t.parent[i]+1]++
	}
	for i := 1; i <= n; i++ {
		childStart[i] += childStart[i-1]
	}
	children := make([]int32, max(n-1, 0))
	fill := slices.Clone(childStart[:n])
	for i := 1; i < n; i++ {
		p := t.parent[i]
		children[fill[p]] = int32(i)
		fill[p]++
	}
	weight := func(i int32) int64 {
		var w int64
		for s := range sides {
			// Compare shares, so a diff keeps what matters on either side.
			if ss.totals[s] > 0 {
				w = max(w, int64(float64(t.total[s][i])/float64(ss.totals[s])*1e12))
			}
		}
		return w
	}
	bar := int64(minShare * 1e12)
	ft := &flameTree{Stride: 2 + 2*sides, Totals: ss.totals, Stacks: len(ss.seqs), MinShare: minShare,
		Type: ss.typ, Unit: ss.unit}
	names := map[int32]int64{} // old name id -> new
	var walk func(i, newParent int32)
	walk = func(i, newParent int32) {
		if ft.Kept >= maxFlameNodes {
			ft.Truncated = true
			return
		}
		self := int64(len(ft.Nodes) / ft.Stride)
		nameID := int64(-1)
		if i != 0 {
			id, ok := names[t.name[i]]
			if !ok {
				id = int64(len(ft.Names))
				names[t.name[i]] = id
				ft.Names = append(ft.Names, ss.names[t.name[i]])
			}
			nameID = id
		}
		ft.Nodes = append(ft.Nodes, nameID, int64(newParent))
		for s := range sides {
			ft.Nodes = append(ft.Nodes, t.total[s][i], t.self[s][i])
		}
		ft.Kept++
		ft.MaxDepth = max(ft.MaxDepth, int(t.depth[i]))
		kids := slices.Clone(children[childStart[i]:childStart[i+1]])
		slices.SortStableFunc(kids, func(a, b int32) int {
			wa, wb := weight(a), weight(b)
			if wa != wb {
				if wa > wb {
					return -1
				}
				return 1
			}
			return 0
		})
		for _, c := range kids {
			if weight(c) < bar || weight(c) == 0 {
				ft.Pruned += countSubtree(childStart, children, c)
				continue
			}
			walk(c, int32(self))
		}
	}
	walk(0, -1)
	if ft.Names == nil {
		ft.Names = []string{}
	}
	return ft
}

func countSubtree(childStart, children []int32, i int32) int {
	n := 1
	for _, c := range children[childStart[i]:childStart[i+1]] {
		n += countSubtree(childStart, children, c)
	}
	return n
}

// newFlameTree builds the flame graph of one profile in the given sample
// type ("" for the profile's default). It returns nil when the profile has
// no such sample type or no samples.
func newFlameTree(kind evidence.Kind, label string, p *profile.Profile, typ string, minShare float64) *flameTree {
	return flameTreeOf(kind, label, evidence.NewStacks(p, typ), minShare)
}

func flameTreeOf(kind evidence.Kind, label string, st *evidence.Stacks, minShare float64) *flameTree {
	if st == nil || st.Total <= 0 {
		return nil
	}
	ss := newStackSet(1)
	ss.add(st, 0)
	ft := ss.build().encode(ss, minShare)
	ft.Kind, ft.Label = string(kind), label
	return ft
}

// flameTrees builds one tab per profile kind present in the evidence; the
// CPU profile's stacks are the diagnosis's (facts.CPUStacks) when it has
// facts, flattened once for the rules and the page alike.
func flameTrees(ev *evidence.Evidence, set *facts.Set, minShare float64) []*flameTree {
	if ev == nil {
		return nil
	}
	var out []*flameTree
	for _, v := range flameViews {
		p := ev.Profile(v.kind)
		if p == nil {
			continue
		}
		typ := evidence.ShownSampleType(v.kind, p)
		var st *evidence.Stacks
		if v.kind == evidence.CPU && typ == "cpu" && set != nil {
			st = facts.Get(set.Any("the report's flame graph"), facts.CPUStacks)
		} else {
			st = evidence.NewStacks(p, typ)
		}
		if ft := flameTreeOf(v.kind, v.label, st, minShare); ft != nil {
			out = append(out, ft)
		}
	}
	return out
}
