package perfscript

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/google/pprof/profile"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// summary renders what a profile says in a stable text form: totals,
// labels, and the leaf functions by samples, kernel frames marked.
func summary(p *profile.Profile) string {
	var b strings.Builder
	for _, st := range p.SampleType {
		fmt.Fprintf(&b, "type %s/%s\n", st.Type, st.Unit)
	}
	fmt.Fprintf(&b, "period %s/%s duration %dns comments %q\n", p.PeriodType.Type, p.PeriodType.Unit, p.DurationNanos, p.Comments)
	var n, v int64
	leaf := map[string]int64{}
	comm := map[string]int64{}
	for _, s := range p.Sample {
		n += s.Value[0]
		v += s.Value[1]
		l := s.Location[0]
		name := l.Line[0].Function.Name
		if IsKernel(l) {
			name = "[k] " + name
		}
		if f := l.Line[0].Function.Filename; f != "" {
			name += fmt.Sprintf(" %s:%d", f, l.Line[0].Line)
		}
		leaf[name] += s.Value[0]
		comm[fmt.Sprintf("%s pid=%v tid=%v", s.Label["comm"][0], s.NumLabel["pid"], s.NumLabel["tid"])] += s.Value[0]
	}
	fmt.Fprintf(&b, "samples %d value %d distinct %d locations %d functions %d mappings %d\n", n, v, len(p.Sample), len(p.Location), len(p.Function), len(p.Mapping))
	for _, m := range []map[string]int64{comm, leaf} {
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Slice(keys, func(i, j int) bool {
			if m[keys[i]] != m[keys[j]] {
				return m[keys[i]] > m[keys[j]]
			}
			return keys[i] < keys[j]
		})
		for _, k := range keys[:min(len(keys), 15)] {
			fmt.Fprintf(&b, "%6d %s\n", m[k], k)
		}
	}
	return b.String()
}

func TestGolden(t *testing.T) {
	for _, name := range []string{"loopback-connect", "jit-srcline", "notime/funcab-pid", "notime/funcab-tid-period", "notime/multi-event-notime"} {
		t.Run(name, func(t *testing.T) {
			f, err := os.Open(filepath.Join("testdata", name+".txt"))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			p, err := Parse(f, Options{MapDir: "testdata"})
			if err != nil {
				t.Fatal(err)
			}
			if err := p.CheckValid(); err != nil {
				t.Fatalf("invalid profile: %v", err)
			}
			var buf bytes.Buffer
			if err := p.Write(&buf); err != nil {
				t.Fatal(err)
			}
			if _, err := profile.Parse(&buf); err != nil {
				t.Fatalf("written profile does not parse back: %v", err)
			}
			got := summary(p)
			golden := filepath.Join("testdata", name+".golden")
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if got != string(want) {
				t.Errorf("summary differs from %s (go test -update to accept):\n%s", golden, got)
			}
		})
	}
}

func TestJITSourceLinesAndLabels(t *testing.T) {
	data, err := os.ReadFile("testdata/jit-srcline.txt")
	if err != nil {
		t.Fatal(err)
	}
	p, err := Parse(bytes.NewReader(data), Options{MapDir: "testdata"})
	if err != nil {
		t.Fatal(err)
	}
	var java, demo *profile.Sample
	for _, s := range p.Sample {
		switch s.Label["comm"][0] {
		case "java":
			java = s
		case "demo":
			demo = s
		}
	}
	if java == nil || demo == nil {
		t.Fatalf("samples by comm missing: %v", summary(p))
	}
	var names []string
	for _, l := range java.Location {
		names = append(names, l.Line[0].Function.Name)
	}
	want := []string{"Interpreted:Lcom/acme/Handler;::serve", "LazyCompiled:*handle app.js:10", "[unknown]", "_raw_spin_unlock_irqrestore"}
	if strings.Join(names, "|") != strings.Join(want, "|") {
		t.Errorf("java frames %q, want %q", names, want)
	}
	if java.NumLabel["pid"][0] != 4242 || java.NumLabel["tid"][0] != 4250 || !IsKernel(java.Location[3]) || IsKernel(java.Location[0]) {
		t.Errorf("java sample labels %v / kernel marks wrong", java.NumLabel)
	}
	// Two identical demo samples merge; a bare number is the thread id.
	if demo.Value[0] != 2 || demo.Value[1] != 2*10101010 || demo.NumLabel["tid"][0] != 77 || demo.NumLabel["pid"] != nil {
		t.Errorf("demo sample %v %v", demo.Value, demo.NumLabel)
	}
	if l := demo.Location[0].Line[0]; l.Function.Name != "main" || l.Function.Filename != "demo.c" || l.Line != 12 {
		t.Errorf("source line of main: %+v %+v", l, l.Function)
	}
	// -F srcline prints "object[addr]" or "??:0" under frames without debug
	// information; GCC's clone suffixes leave the source name.
	var clone *profile.Function
	for _, fn := range p.Function {
		if fn.SystemName == "finish_task_switch.isra.0" {
			clone = fn
		}
	}
	if clone == nil || clone.Name != "finish_task_switch" {
		t.Errorf("clone-suffixed function: %+v", clone)
	}
	// Without the map the JIT frames stay unknown, named by their object.
	p, err = Parse(bytes.NewReader(data), Options{MapDir: "-"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(summary(p), "[unknown] perf-4242.map") {
		t.Errorf("unmapped JIT frame not named by its map file:\n%s", summary(p))
	}
}

func TestBadInput(t *testing.T) {
	for name, in := range map[string]string{
		"empty":           "",
		"comments only":   "# nothing\n",
		"frame first":     "\t ffff sym (dso)\n",
		"no address":      "a 1/1 1.0: 1 cpu-clock:\n\tnot-hex sym (x)\n",
		"header no pid":   "just words here\n",
		"line too long":   "a 1/1 1.0: 1 cpu-clock:\n\t" + strings.Repeat("f", 2<<10) + "\n",
		"json by mistake": `{"a": 1}`,
	} {
		_, err := Parse(strings.NewReader(in), Options{MapDir: "-", MaxLine: 1 << 10})
		if err == nil {
			t.Errorf("%s: no error", name)
		} else if strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: error spans lines: %q", name, err)
		}
	}
	if _, err := Parse(strings.NewReader("# c\n\n"), Options{}); !errors.Is(err, ErrNoSamples) {
		t.Errorf("comments only: %v, want ErrNoSamples", err)
	}
}

func TestLooks(t *testing.T) {
	for _, name := range []string{"loopback-connect.txt", "jit-srcline.txt", "notime/funcab-pid.txt", "notime/funcab-tid-period.txt", "notime/multi-event-notime.txt"} {
		data, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		if !Looks(data) {
			t.Errorf("%s: perf script output not recognised", name)
		}
	}
	for _, s := range []string{"", "{}", "go 1.22 trace", "heap profile: 1: 2 [3: 4] @ heap/1048576\n", "main.f;main.g 10\n",
		// A header without a timestamp is taken only with a stack frame under it.
		"server 8080 started:\nserver 8081 started:\n", "worker 3 failed:\n\tretrying in 5s\n", "job 12 done:\nok\n"} {
		if Looks([]byte(s)) {
			t.Errorf("%q taken for perf script", s)
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, name := range []string{"testdata/jit-srcline.txt", "testdata/loopback-connect.txt"} {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data[:min(len(data), 4096)])
	}
	f.Add([]byte("a b 1/2 [0] 1.5: 7 cpu-clock:\n\tff x+0x1 (y)\n  f.c:9\n\n"))
	f.Add([]byte("java 19983 cycles:\nffffffff8103d0ca native_write_msr_safe ([kernel.kallsyms])\n7f1e sym with spaces (/tmp/perf-1.map)\n\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Parse(bytes.NewReader(data), Options{MapDir: "-", MaxLine: 4096})
		if err != nil {
			return
		}
		if err := p.CheckValid(); err != nil {
			t.Fatalf("invalid profile from %q: %v", data, err)
		}
		Looks(data)
	})
}

func BenchmarkParse(b *testing.B) {
	data, err := os.ReadFile("testdata/loopback-connect.txt")
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := Parse(bytes.NewReader(data), Options{MapDir: "-"}); err != nil {
			b.Fatal(err)
		}
	}
}

// A recording of three events (perf record -e cpu-clock -e page-faults -e
// task-clock:u -g, made here with perf 6.1) gives three profiles whose
// sample counts are perf's own per-event counts, not one sum.
func TestEventsKeptApart(t *testing.T) {
	data, err := os.ReadFile("testdata/multi-event.txt")
	if err != nil {
		t.Fatal(err)
	}
	ps, err := ParseEvents(bytes.NewReader(data), Options{MapDir: "-"})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	var order []string
	for _, p := range ps {
		if err := p.CheckValid(); err != nil {
			t.Fatal(err)
		}
		var n int64
		for _, s := range p.Sample {
			n += s.Value[0]
		}
		got[Event(p)] = n
		order = append(order, Event(p)+"/"+p.SampleType[1].Unit)
	}
	// Counted with: grep -v '^\s' multi-event.txt | grep -o '[a-z:-]*: $' | sort | uniq -c
	want := map[string]int64{"cpu-clock": 60, "page-faults": 12, "task-clock:u": 40}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("samples per event %v, want %v", got, want)
	}
	if strings.Join(order, " ") != "page-faults/count cpu-clock/nanoseconds task-clock:u/nanoseconds" {
		t.Errorf("events in order %v", order)
	}
	p, err := Parse(bytes.NewReader(data), Options{MapDir: "-"})
	if err != nil || Event(p) != "cpu-clock" {
		t.Errorf("Parse picked %q (%v), want the on-CPU cpu-clock", Event(p), err)
	}
}

// Frames printed flush left read as the indented ones do.
func TestUnindentedFrames(t *testing.T) {
	data, err := os.ReadFile("testdata/multi-event.txt")
	if err != nil {
		t.Fatal(err)
	}
	var flat bytes.Buffer
	for _, l := range strings.Split(string(data), "\n") {
		flat.WriteString(strings.TrimLeft(l, " \t") + "\n")
	}
	if !Looks(flat.Bytes()) {
		t.Error("unindented perf script not recognised")
	}
	a, err := ParseEvents(bytes.NewReader(data), Options{MapDir: "-"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := ParseEvents(&flat, Options{MapDir: "-"})
	if err != nil {
		t.Fatal(err)
	}
	if len(a) != len(b) {
		t.Fatalf("%d events indented, %d flush left", len(a), len(b))
	}
	for i := range a {
		if sa, sb := summary(a[i]), summary(b[i]); sa != sb {
			t.Errorf("event %s differs flush left:\n%s\nvs\n%s", Event(a[i]), sb, sa)
		}
	}
}

func TestIsCPUEvent(t *testing.T) {
	for ev, want := range map[string]bool{
		"cpu-clock": true, "task-clock": true, "cycles": true, "cycles:u": true, "cycles:ppp": true,
		"cpu-cycles:k": true, "cpu_core/cycles/u": true, "cpu/cycles/": true, "task-clock:u": true,
		"instructions": false, "instructions:u": false, "page-faults": false, "cache-misses": false,
		"sched:sched_switch": false, "": false, "cpu/instructions/": false,
	} {
		if IsCPUEvent(ev) != want {
			t.Errorf("IsCPUEvent(%q) = %v, want %v", ev, !want, want)
		}
	}
	hdr := "app 10/11 [002] 5.250000:     250000 cycles:u: \n\tffff81 f+0x1 ([kernel.kallsyms])\n\n" +
		"app 10/11 [002] 5.260000:     9000 instructions:u: \n\tffff81 f+0x1 ([kernel.kallsyms])\n\n"
	ps, err := ParseEvents(strings.NewReader(hdr), Options{MapDir: "-"})
	if err != nil || len(ps) != 2 {
		t.Fatalf("%d profiles, %v", len(ps), err)
	}
	if Event(ps[0]) != "cycles:u" || ps[0].SampleType[1].Unit != "cycles" || ps[0].Sample[0].Value[1] != 250000 {
		t.Errorf("cycles:u profile %v %v", Event(ps[0]), ps[0].SampleType[1])
	}
}

// perf's own stackcollapse script (perf script -s stackcollapse.py, from
// linux-perf 6.1; FlameGraph's stackcollapse-perf.pl is not packaged in
// Debian 12) run on the perf.data each text file was printed from is the
// oracle: the same stacks with the same counts, all events together as
// that script counts them. multi-event: three software events of sh and
// ls; md5sum: cpu-clock of find and md5sum, deep kernel stacks.
//
// The notime files print their sample headers without a timestamp (perf
// script -F comm,pid,event,ip,sym,dso and the like), as FlameGraph's test
// inputs do; the same recording printed with and without the period reads
// the same.
func TestStackcollapseOracle(t *testing.T) {
	for name, oracle := range map[string]string{
		"multi-event": "multi-event", "md5sum": "md5sum",
		"notime/funcab-pid": "notime/funcab", "notime/funcab-tid-period": "notime/funcab",
		"notime/multi-event-notime": "notime/multi-event-notime",
	} {
		t.Run(name, func(t *testing.T) { checkOracle(t, name, oracle) })
	}
}

func checkOracle(t *testing.T, name, oracleName string) {
	oracle, err := os.ReadFile("testdata/" + oracleName + ".stackcollapse")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{}
	for _, l := range strings.Split(strings.TrimSpace(string(oracle)), "\n") {
		i := strings.LastIndexByte(l, ' ')
		var n int64
		fmt.Sscan(l[i+1:], &n)
		want[l[:i]] += n
	}
	data, err := os.ReadFile("testdata/" + name + ".txt")
	if err != nil {
		t.Fatal(err)
	}
	ps, err := ParseEvents(bytes.NewReader(data), Options{MapDir: "-"})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	for _, p := range ps {
		for _, s := range p.Sample {
			// The script's spelling: comm first with '_' for spaces, raw
			// symbols, "[unknown]" whatever the object, ';' as ':'.
			frames := []string{strings.ReplaceAll(s.Label["comm"][0], " ", "_")}
			for i := len(s.Location) - 1; i >= 0; i-- {
				name := s.Location[i].Line[0].Function.SystemName
				if strings.HasPrefix(name, "[unknown]") {
					name = "[unknown]"
				}
				frames = append(frames, strings.ReplaceAll(name, ";", ":"))
			}
			got[strings.Join(frames, ";")] += s.Value[0]
		}
	}
	for k, n := range want {
		if got[k] != n {
			t.Errorf("stack %q: %d, stackcollapse says %d", k, got[k], n)
		}
	}
	for k, n := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("stack %q (%d) not in stackcollapse's output", k, n)
		}
	}
}

// FuzzParseJITMap reads perf-PID.map files a JIT wrote (the JVM through
// perf-map-agent or async-profiler, node --perf-basic-prof): any content
// reads without a panic, and a lookup names only a symbol whose range
// holds the address.
func FuzzParseJITMap(f *testing.F) {
	f.Add([]byte("7f3a1c000000 40 Interpreter\n7f3a1c000100 1a0 LWork;::compile\n"), uint64(0x7f3a1c000120))
	f.Add([]byte("0x10 0x10 a b c\nffffffffffffffff 2 wraps\n\n10 5 overlaps\n"), uint64(0x12))
	f.Fuzz(func(t *testing.T, data []byte, addr uint64) {
		m, err := parseJITMap(bytes.NewReader(data))
		if err != nil {
			return
		}
		if !slices.IsSorted(m.starts) || len(m.starts) != len(m.ends) || len(m.starts) != len(m.names) {
			t.Fatalf("malformed map from %q: %+v", data, m)
		}
		name := m.name(addr)
		if name == "" {
			return
		}
		for i, n := range m.names {
			if n == name && m.starts[i] <= addr && addr < m.ends[i] {
				return
			}
		}
		t.Fatalf("%#x named %q outside its range in %+v", addr, name, m)
	})
}

// perf script -F without time, the shape of FlameGraph's test inputs: the
// samples read as the timed ones do, each counts one sample when no period
// was printed, and the profile says what the header lacked.
func TestNoTimestamps(t *testing.T) {
	read := func(name string) *profile.Profile {
		t.Helper()
		data, err := os.ReadFile("testdata/notime/" + name)
		if err != nil {
			t.Fatal(err)
		}
		p, err := Parse(bytes.NewReader(data), Options{MapDir: "-"})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	bare, withPeriod := read("funcab-pid.txt"), read("funcab-tid-period.txt")
	if bare.DurationNanos != 0 || !slices.Contains(bare.Comments, NoTimeComment) || !slices.Contains(bare.Comments, NoPeriodComment) {
		t.Errorf("no time, no period: duration %d, comments %q", bare.DurationNanos, bare.Comments)
	}
	if u := bare.SampleType[1].Unit; u != "count" {
		t.Errorf("cpu-clock without periods in %s, want count", u)
	}
	if u := withPeriod.SampleType[1].Unit; u != "nanoseconds" || slices.Contains(withPeriod.Comments, NoPeriodComment) {
		t.Errorf("cpu-clock with periods in %s, comments %q", u, withPeriod.Comments)
	}
	// func_b does twice func_a's work (funcab.c).
	share := func(p *profile.Profile, fn string) float64 {
		var hit, all int64
		for _, s := range p.Sample {
			all += s.Value[0]
			for _, l := range s.Location {
				if l.Line[0].Function.Name == fn {
					hit += s.Value[0]
					break
				}
			}
		}
		return float64(hit) / float64(all)
	}
	for _, p := range []*profile.Profile{bare, withPeriod} {
		a, b := share(p, "func_a"), share(p, "func_b")
		if a < 0.2 || b < 1.5*a {
			t.Errorf("func_a %.2f, func_b %.2f of the samples, want about 1/3 and 2/3", a, b)
		}
	}
}

// Options.SourceLine names the frames perf printed without a source line,
// with the sample's process, the frame's object and its address; a line
// perf printed is kept.
func TestSourceLineOption(t *testing.T) {
	data, err := os.ReadFile("testdata/jit-srcline.txt")
	if err != nil {
		t.Fatal(err)
	}
	type ask struct {
		pid  int64
		dso  string
		addr uint64
	}
	var asked []ask
	p, err := Parse(bytes.NewReader(data), Options{MapDir: "-", SourceLine: func(pid int64, dso string, addr uint64) (string, int64, bool) {
		asked = append(asked, ask{pid, dso, addr})
		if dso == "/usr/lib/libc.so.6" {
			return "libc-start.c", 74, true
		}
		return "", 0, false
	}})
	if err != nil {
		t.Fatal(err)
	}
	lines := map[string]string{}
	for _, l := range p.Location {
		ln := l.Line[0]
		lines[ln.Function.Name] = fmt.Sprintf("%s:%d", ln.Function.Filename, ln.Line)
	}
	if lines["__libc_start_main"] != "libc-start.c:74" || lines["main"] != "demo.c:12" || lines["_raw_spin_unlock_irqrestore"] != ":0" {
		t.Errorf("lines %v", lines)
	}
	if !slices.Contains(asked, ask{4242, "/usr/lib/libc.so.6", 0x4011f0}) || slices.Contains(asked, ask{4242, "/usr/bin/demo", 0x4011a6}) {
		t.Errorf("asked %v: want libc's frame with its pid and address, and not demo's, which perf named", asked)
	}
}
