package folded

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/pprof/profile"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// render prints a profile as stable text: every sample, leaf last, with
// each frame's kind, and the totals.
func render(p *profile.Profile) string {
	var lines []string
	for _, s := range p.Sample {
		var fr []string
		for i := len(s.Location) - 1; i >= 0; i-- {
			l := s.Location[i]
			fr = append(fr, l.Line[0].Function.Name+" "+l.Mapping.File)
		}
		lines = append(lines, fmt.Sprintf("%d %d | %s", s.Value[0], s.Value[1], strings.Join(fr, " ; ")))
	}
	sort.Strings(lines)
	var types []string
	for _, st := range p.SampleType {
		types = append(types, st.Type+"/"+st.Unit)
	}
	return fmt.Sprintf("types %s\n%s\n", strings.Join(types, " "), strings.Join(lines, "\n"))
}

func TestGolden(t *testing.T) {
	for _, name := range []string{"async.collapsed", "flamegraph.folded", "asprof/work.collapsed"} {
		t.Run(name, func(t *testing.T) {
			in, err := os.ReadFile(filepath.Join("testdata", name))
			if err != nil {
				t.Fatal(err)
			}
			if !Sniff(in) {
				t.Fatal("Sniff does not recognise the file")
			}
			p, err := Parse(bytes.NewReader(in))
			if err != nil {
				t.Fatal(err)
			}
			if err := p.CheckValid(); err != nil {
				t.Fatalf("invalid profile: %v", err)
			}
			got := render(p)
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
				t.Errorf("got\n%s\nwant\n%s", got, want)
			}
		})
	}
}

func TestFrameKinds(t *testing.T) {
	for in, want := range map[string][2]string{
		"java/lang/String.equals_[j]": {"java.lang.String.equals", KindJava},
		"com/x/Y.z_[i]":               {"com.x.Y.z", KindJava},
		"do_syscall_64_[k]":           {"do_syscall_64", KindKernel},
		"github.com/a/b.F":            {"github.com/a/b.F", KindNative},
		"weird_[x]":                   {"weird_[x]", KindNative},
		"[tid=12]":                    {"[tid=12]", KindNative},
	} {
		name, kind := Frame(in)
		if name != want[0] || kind != want[1] {
			t.Errorf("Frame(%q) = %q %q, want %q", in, name, kind, want)
		}
	}
}

func TestErrors(t *testing.T) {
	for in, want := range map[string]string{
		"":                  "no samples",
		"a;b\n":             "line 1",
		"a;b 1\na;b x\n":    `line 2: count "x"`,
		"a;b -3\n":          "non-negative",
		"# only comments\n": "no samples",
	} {
		_, err := Parse(strings.NewReader(in))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse(%q) = %v, want an error containing %q", in, err, want)
		}
	}
}

// An empty frame is kept where flamegraph.pl draws it, not a reason to
// refuse the file.
func TestEmptyFrameKept(t *testing.T) {
	p, err := Parse(strings.NewReader("main;;work 3\nmain;work 1\n"))
	if err != nil {
		t.Fatal(err)
	}
	got := render(p)
	if !strings.Contains(got, "3 30000000 | main [native] ;  [native] ; work [native]") {
		t.Errorf("empty frame lost:\n%s", got)
	}
}

// A ';' inside a JVM signature (async-profiler -g) does not split the frame:
// the method is named without its signature, which stays in SystemName.
func TestJVMSignatureKeptWhole(t *testing.T) {
	in := "java/lang/Thread.run()V_[j];sun/nio/ch/FileDispatcherImpl.read0(Ljava/io/FileDescriptor;JI)I_[j] 7\n" +
		"java/lang/Thread.run()V;java/util/HashMap.get(Ljava/lang/Object;)Ljava/lang/Object; 2\n"
	if !Sniff([]byte(in)) {
		t.Error("signature stacks not recognised")
	}
	p, err := Parse(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	var leaves []string
	for _, s := range p.Sample {
		fn := s.Location[0].Line[0].Function
		leaves = append(leaves, fn.Name+" = "+fn.SystemName+" "+s.Location[0].Mapping.File)
		if len(s.Location) != 2 {
			t.Errorf("%d frames, want 2: %v", len(s.Location), leaves)
		}
	}
	want := []string{
		"sun.nio.ch.FileDispatcherImpl.read0 = sun/nio/ch/FileDispatcherImpl.read0(Ljava/io/FileDescriptor;JI)I [java]",
		"java.util.HashMap.get = java/util/HashMap.get(Ljava/lang/Object;)Ljava/lang/Object; [java]",
	}
	if strings.Join(leaves, "\n") != strings.Join(want, "\n") {
		t.Errorf("leaves\n%s\nwant\n%s", strings.Join(leaves, "\n"), strings.Join(want, "\n"))
	}
	// Parentheses that are no signature change nothing.
	if name, kind := Frame("operator()(int);x"); name != "operator()(int);x" || kind != KindNative {
		t.Errorf("C++ frame read as %q %q", name, kind)
	}
}

// Counts that are time are told from sample counts, and the guess says so;
// the caller's word overrides it.
func TestWeights(t *testing.T) {
	periods := "main;a 30000000\nmain;b 10000000\nmain;c 120000000\n"
	res, err := ParseWith(strings.NewReader(periods), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Weights != WeightsNanoseconds || !strings.Contains(res.Assumed, "multiple of 10ms") {
		t.Errorf("periods read as %q (%q)", res.Weights, res.Assumed)
	}
	var n, ns int64
	for _, s := range res.Profile.Sample {
		n += s.Value[0]
		ns += s.Value[1]
	}
	if n != 16 || ns != 160000000 {
		t.Errorf("samples %d, time %d ns; want 16 and 160ms", n, ns)
	}
	res, err = ParseWith(strings.NewReader(periods), Options{Weights: WeightsSamples})
	if err != nil || res.Assumed != "" || res.Profile.Sample[0].Value[0] != 30000000 {
		t.Errorf("--folded-weights=samples not obeyed: %+v %v", res, err)
	}
	for name, in := range map[string]string{
		"stackcollapse-perf": "main;a 3\nmain;b 1200\nmain;c 41\n",
		"round counts":       "main;a 100\nmain;b 200\n",
		"one stack":          "main;a 500000\n",
	} {
		res, err := ParseWith(strings.NewReader(in), Options{})
		if err != nil || res.Weights != WeightsSamples || res.Assumed != "" {
			t.Errorf("%s: read as %q (%q, %v)", name, res.Weights, res.Assumed, err)
		}
	}
	irregular := "main;a 31234567\nmain;b 2345679\nmain;c 9876543\n"
	if w, why := Guess(countsOf(irregular)); w != WeightsNanoseconds || !strings.Contains(why, "median") {
		t.Errorf("large irregular counts: %q %q", w, why)
	}
	if _, err := ParseWeights("bogus"); err == nil {
		t.Error("bad --folded-weights accepted")
	}
}

func countsOf(in string) []int64 {
	var out []int64
	for _, l := range strings.Split(strings.TrimSpace(in), "\n") {
		_, n, _ := split(l)
		out = append(out, n)
	}
	return out
}

func TestSniffRejects(t *testing.T) {
	for _, in := range []string{`{"a": 1}`, "heap profile: 1: 2 [3: 4] @ heap/1048576\n", "hello world\n", "\x00\x01 2\n", "FLR\x00",
		// /proc/stat, /proc/vmstat: "name count" lines are no stacks.
		"btime 1763956000\nprocesses 98123\nprocs_running 2\nprocs_blocked 0\n",
		"nr_free_pages 12345\nnr_zone_inactive_anon 77\nnr_zone_active_anon 8899\n",
		"main 3\nfoo 2\n", ";; 4\n"} {
		if Sniff([]byte(in)) {
			t.Errorf("Sniff(%q) = true", in)
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, name := range []string{"async.collapsed", "flamegraph.folded", "asprof/work.collapsed"} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("a;b_[k] 1\n;x 2\n"))
	f.Add([]byte("a;java/io/F.read(Ljava/io/FileDescriptor;JI)I_[j] 20000000\nb;;c 10000000\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		Sniff(data)
		if res, err := ParseWith(bytes.NewReader(data), Options{}); err == nil {
			if err := res.Profile.CheckValid(); err != nil {
				t.Fatalf("invalid profile (weights %s) from %q: %v", res.Weights, data, err)
			}
		}
		p, err := Parse(bytes.NewReader(data))
		if err != nil {
			return
		}
		if err := p.CheckValid(); err != nil {
			t.Fatalf("invalid profile from %q: %v", data, err)
		}
		var buf bytes.Buffer
		if err := p.Write(&buf); err != nil {
			t.Fatal(err)
		}
	})
}

func BenchmarkParse(b *testing.B) {
	var buf bytes.Buffer
	for i := range 20000 {
		fmt.Fprintf(&buf, "java/lang/Thread.run_[j];com/example/S%d.handle_[j];com/example/R.m%d_[i] %d\n", i%50, i%300, i%7+1)
	}
	b.SetBytes(int64(buf.Len()))
	for b.Loop() {
		if _, err := Parse(bytes.NewReader(buf.Bytes())); err != nil {
			b.Fatal(err)
		}
	}
}

// async-profiler 4 writes a signature's ';' as '|' in collapsed stacks
// (sig): on its real output every frame is one function, a return type
// does not swallow the next frame, and the samples add up.
func TestAsyncProfilerSignatureBars(t *testing.T) {
	in, err := os.ReadFile("testdata/asprof/work.collapsed")
	if err != nil {
		t.Fatal(err)
	}
	var lines, frames, total int64
	for _, l := range strings.Split(strings.TrimSpace(string(in)), "\n") {
		stack, n, err := split(l)
		if err != nil {
			t.Fatal(err)
		}
		lines++
		total += n
		frames += int64(len(splitFrames(stack)))
	}
	p, err := Parse(bytes.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	var got, depth int64
	for _, s := range p.Sample {
		got += s.Value[0]
		depth += int64(len(s.Location))
	}
	if got != total || total != 305 || depth != frames || lines != 89 {
		t.Errorf("%d samples in %d frames, want %d in %d (%d lines)", got, depth, total, frames, lines)
	}
	for _, fn := range p.Function {
		if strings.ContainsAny(fn.Name, "|;") {
			t.Errorf("frame %q holds a separator or a signature", fn.Name)
		}
	}
}
