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
	for _, name := range []string{"async.collapsed", "flamegraph.folded"} {
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
		"a;;b 3\n":          "empty frame",
		"a;b -3\n":          "non-negative",
		"# only comments\n": "no samples",
	} {
		_, err := Parse(strings.NewReader(in))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse(%q) = %v, want an error containing %q", in, err, want)
		}
	}
}

func TestSniffRejects(t *testing.T) {
	for _, in := range []string{`{"a": 1}`, "heap profile: 1: 2 [3: 4] @ heap/1048576\n", "hello world\n", "\x00\x01 2\n", "FLR\x00"} {
		if Sniff([]byte(in)) {
			t.Errorf("Sniff(%q) = true", in)
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, name := range []string{"async.collapsed", "flamegraph.folded"} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("a;b_[k] 1\n;x 2\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
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
