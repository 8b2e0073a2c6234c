package lib004

import (
	"bytes"
	"compress/zlib"
	"crypto/sha256"
	"fmt"
	"math/rand"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"

	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/internal/testprof"
	"github.com/perfdoctor/perfdoctor/rules"
)

// payload is ~256 KB of JSON-like events, as compressed in case C1.
var payload = func() []byte {
	r := rand.New(rand.NewSource(1))
	words := []string{"user", "id", "timestamp", "event", "click", "view", "campaign", "price", "bid", "country"}
	var b bytes.Buffer
	for b.Len() < 256<<10 {
		fmt.Fprintf(&b, `{"%s":%d,"%s":"%s-%d","%s":%.3f},`, words[r.Intn(10)], r.Intn(100000),
			words[r.Intn(10)], words[r.Intn(10)], r.Intn(1000), words[r.Intn(10)], r.Float64()*100)
	}
	return b.Bytes()
}()

var out bytes.Buffer

func archiveBest() {
	out.Reset()
	zw, _ := zlib.NewWriterLevel(&out, zlib.BestCompression)
	zw.Write(payload)
	zw.Close()
}

var sum [32]byte

// archiveRaw stores the payload uncompressed, with a checksum.
func archiveRaw() {
	out.Reset()
	out.Write(payload)
	sum = sha256.Sum256(out.Bytes())
}

func run(cpu *profile.Profile) rules.Result {
	return rules.Run(testprof.Evidence(map[evidence.Kind]*profile.Profile{evidence.CPU: cpu}), []*rules.Rule{Rule})
}

func one(t *testing.T, res rules.Result) rules.Finding {
	t.Helper()
	if len(res.Findings) != 1 {
		t.Fatalf("want one compression-level finding, got %d (not checked %v)", len(res.Findings), res.NotChecked)
	}
	return res.Findings[0]
}

func TestFiresOnBestCompression(t *testing.T) {
	f := one(t, run(testprof.CPU(t, 2*time.Second, 1, archiveBest)))
	if f.Impact < 0.3 || f.Severity != rules.High {
		t.Errorf("impact %.2f severity %s: want high, half of ~100%%", f.Impact, f.Severity)
	}
	if !strings.Contains(f.Summary, "likely a high level") || !strings.Contains(f.Summary, "archiveBest") {
		t.Errorf("summary %q", f.Summary)
	}
	if !strings.Contains(f.Fix, "DefaultCompression") || !strings.Contains(f.Fix, "klauspost/compress") {
		t.Errorf("fix %q", f.Fix)
	}
	if len(f.Locations) == 0 || !strings.Contains(f.Locations[0].Function, "archiveBest") {
		t.Errorf("locations %+v", f.Locations)
	}
}

func TestSilentWithoutCompression(t *testing.T) {
	if res := run(testprof.CPU(t, 2*time.Second, 1, archiveRaw)); len(res.Findings) != 0 {
		t.Fatalf("uncompressed archiving reported: %+v", res.Findings[0])
	}
}

func stack(v int64, funcs ...string) testprof.Stack { return testprof.Stack{Value: v, Funcs: funcs} }

func TestLevelFromFrames(t *testing.T) {
	gz := []string{"compress/flate.(*compressor).write", "compress/flate.(*Writer).Write", "compress/gzip.(*Writer).Write", "main.(*server).respond"}
	// Symbol names as in github.com/klauspost/compress v1.18 flate/deflate.go, level5.go, zstd/enc_best.go.
	kgz := []string{kp + "flate.(*compressor).write", kp + "flate.(*Writer).Write", kp + "gzip.(*Writer).Write", "main.(*server).respond"}
	for _, tc := range []struct {
		name   string
		leaf   []string
		stack  []string
		level  string
		impact float64
	}{
		{"stdlib BestSpeed", []string{"compress/flate.(*deflateFast).encode", "compress/flate.(*compressor).encSpeed"}, gz, "BestSpeed (1)", 0.3 * 0.3},
		{"klauspost level 9", []string{kp + "flate.(*compressor).findMatch", kp + "flate.(*compressor).deflateLazy"}, kgz, "level 7-9", 0.5 * 0.3},
		{"klauspost level 5", []string{kp + "flate.(*fastEncL5).Encode", kp + "flate.(*compressor).storeFast"}, kgz, "level 5", 0.3 * 0.3},
		{"zstd best", []string{kp + "zstd.(*bestFastEncoder).Encode", kp + "zstd.(*Encoder).nextBlock", kp + "zstd.(*Encoder).Write"}, []string{"main.(*archiver).put"}, "SpeedBestCompression", 0.5 * 0.3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cpu := testprof.Build(stack(300, append(append([]string{}, tc.leaf...), tc.stack...)...), stack(700, "main.work"))
			f := one(t, run(cpu))
			if !strings.Contains(f.Summary, tc.level) || f.Impact < tc.impact-1e-9 || f.Impact > tc.impact+1e-9 {
				t.Errorf("summary %q impact %.3f, want level %q impact %.3f", f.Summary, f.Impact, tc.level, tc.impact)
			}
			if high := tc.impact > 0.1; (f.Severity > rules.Low) != high {
				t.Errorf("severity %s: only a high level may grade above low", f.Severity)
			}
			if len(f.Locations) == 0 || !strings.HasPrefix(f.Locations[0].Function, "main.") {
				t.Errorf("locations %+v", f.Locations)
			}
		})
	}
}

func TestWriterPerCallIsNamed(t *testing.T) {
	cpu := testprof.Build(
		stack(100, "runtime.memclrNoHeapPointers", "runtime.mallocgc", "compress/flate.(*compressor).init", "compress/flate.NewWriter", "compress/gzip.(*Writer).Write", "main.respond"),
		stack(200, "compress/flate.(*compressor).findMatch", "compress/flate.(*compressor).deflate", "compress/flate.(*compressor).write", "compress/flate.(*Writer).Write", "compress/gzip.(*Writer).Write", "main.respond"),
		stack(700, "main.work"),
	)
	f := one(t, run(cpu))
	if !strings.Contains(f.Fix, "sync.Pool") {
		t.Errorf("fix does not advise reusing writers: %s", f.Fix)
	}
}

func TestSilentOnDecompressionAndSmallShares(t *testing.T) {
	cpu := testprof.Build(
		stack(400, "compress/flate.(*decompressor).huffSym", "compress/flate.(*decompressor).huffmanBlock", "compress/flate.(*decompressor).Read", "compress/gzip.(*Reader).Read", "io.ReadAll", "main.ingest"),
		stack(40, "compress/flate.(*compressor).deflate", "compress/flate.(*compressor).write", "compress/flate.(*Writer).Write", "compress/gzip.(*Writer).Write", "main.respond"),
		stack(560, "main.work"),
	)
	if res := run(cpu); len(res.Findings) != 0 {
		t.Fatalf("decompression / 4%% compression reported: %+v", res.Findings[0])
	}
}
