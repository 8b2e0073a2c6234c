package lib004

import (
	"bytes"
	"compress/gzip"
	"compress/zlib"
	"crypto/sha256"
	"fmt"
	"io"
	"math/rand"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/perfdoctor/perfdoctor/facts"

	"github.com/google/pprof/profile"

	"github.com/perfdoctor/perfdoctor/bundle"
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
	return rules.Run(facts.New(testprof.Evidence(map[evidence.Kind]*profile.Profile{evidence.CPU: cpu})), []*rules.Rule{Rule})
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
	if f.Impact < 0.25 || f.Severity != rules.High {
		t.Errorf("impact %.2f severity %s: want high, 30%% of ~100%%", f.Impact, f.Severity)
	}
	if !strings.Contains(f.Summary, "level from 2 to 9") || !strings.Contains(f.Summary, "archiveBest") || strings.Contains(f.Summary, "likely") {
		t.Errorf("summary %q: the level must be read as 2-9, not guessed", f.Summary)
	}
	if !strings.Contains(f.Fix, "MB/s") || !strings.Contains(f.Fix, "klauspost/compress") {
		t.Errorf("fix %q: want the measured level table", f.Fix)
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

func TestGradeByShareAndLevelOnlyWhereVisible(t *testing.T) {
	gz := []string{"compress/flate.(*compressor).write", "compress/flate.(*Writer).Write", "compress/gzip.(*Writer).Write", "main.(*server).respond"}
	// Symbol names as in github.com/klauspost/compress v1.18 flate/deflate.go, level5.go, zstd/enc_best.go.
	kgz := []string{kp + "flate.(*compressor).write", kp + "flate.(*Writer).Write", kp + "gzip.(*Writer).Write", "main.(*server).respond"}
	for _, tc := range []struct {
		name   string
		leaf   []string
		stack  []string
		share  int64 // of 1000 samples
		level  string
		impact float64
		sev    rules.Severity
	}{
		// 83% of CPU in deflate is high whatever the level, and the level is not guessed.
		{"stdlib deflate 83%", []string{"compress/flate.(*compressor).findMatch", "compress/flate.(*compressor).deflate"}, gz, 830, "level from 2 to 9", 0.83 * recoverLower, rules.High},
		{"stdlib deflate 12%", []string{"compress/flate.(*compressor).findMatch", "compress/flate.(*compressor).deflate"}, gz, 120, "level from 2 to 9", 0.12 * recoverLower, rules.Medium},
		{"stdlib BestSpeed 83%", []string{"compress/flate.(*deflateFast).encode", "compress/flate.(*compressor).encSpeed"}, gz, 830, "BestSpeed (1)", 0.83 * recoverOther, rules.High},
		{"stdlib BestSpeed 6%", []string{"compress/flate.(*deflateFast).encode", "compress/flate.(*compressor).encSpeed"}, gz, 60, "BestSpeed (1)", 0.06 * recoverOther, rules.Low},
		{"klauspost level 9", []string{kp + "flate.(*compressor).findMatch", kp + "flate.(*compressor).deflateLazy"}, kgz, 300, "level 7-9", 0.3 * recoverHigh, rules.High},
		{"klauspost level 5", []string{kp + "flate.(*fastEncL5).Encode", kp + "flate.(*compressor).storeFast"}, kgz, 300, "level 5", 0.3 * recoverOther, rules.High},
		{"zstd best", []string{kp + "zstd.(*bestFastEncoder).Encode", kp + "zstd.(*Encoder).nextBlock", kp + "zstd.(*Encoder).Write"}, []string{"main.(*archiver).put"}, 200, "SpeedBestCompression", 0.2 * recoverHigh, rules.Medium},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cpu := testprof.Build(stack(tc.share, append(append([]string{}, tc.leaf...), tc.stack...)...), stack(1000-tc.share, "main.work"))
			f := one(t, run(cpu))
			// The rule's share, as the engine estimates a fix that
			// states no range of its own.
			want := rules.Estimated(tc.impact)
			if !strings.Contains(f.Summary, tc.level) || f.Impact < want-1e-9 || f.Impact > want+1e-9 || f.Severity != tc.sev {
				t.Errorf("summary %q impact %.3f severity %s, want level %q impact %.3f severity %s", f.Summary, f.Impact, f.Severity, tc.level, want, tc.sev)
			}
			if strings.Contains(f.Summary+f.Fix, "likely") {
				t.Errorf("the level is guessed: %s / %s", f.Summary, f.Fix)
			}
			if len(f.Locations) == 0 || !strings.HasPrefix(f.Locations[0].Function, "main.") {
				t.Errorf("locations %+v", f.Locations)
			}
		})
	}
}

// gzipPerCall compresses a response it builds with a new writer each time;
// gzipPooled reuses writers from a pool.
func gzipPerCall() {
	zw := gzip.NewWriter(io.Discard)
	zw.Write(body())
	zw.Close()
}

// body builds a 64 KB response, as a handler encoding its reply does.
func body() []byte { return append([]byte(nil), payload[:64<<10]...) }

var pool = sync.Pool{New: func() any { return gzip.NewWriter(io.Discard) }}

func gzipPooled() {
	zw := pool.Get().(*gzip.Writer)
	zw.Reset(io.Discard)
	zw.Write(body())
	zw.Close()
	pool.Put(zw)
}

func TestWriterReuseFromTheAllocsProfile(t *testing.T) {
	// The CPU profile is the same in both: the allocation sites decide.
	cpu := testprof.Build(
		stack(600, "compress/flate.(*compressor).findMatch", "compress/flate.(*compressor).deflate", "compress/flate.(*compressor).write", "compress/flate.(*Writer).Write", "compress/gzip.(*Writer).Write", "main.respond"),
		stack(400, "main.work"),
	)
	diagnose := func(allocs *profile.Profile) rules.Finding {
		ev := testprof.Evidence(map[evidence.Kind]*profile.Profile{evidence.CPU: cpu, evidence.Allocs: allocs})
		return one(t, rules.Run(facts.New(ev), []*rules.Rule{Rule}))
	}
	perCall := diagnose(allocsOf(t, gzipPerCall))
	fresh := fact(perCall, "allocated bytes in new compressors (allocs profile)")
	if fresh < 0.5 || !strings.Contains(perCall.Fix, "sync.Pool") || !strings.Contains(perCall.Fix, "of allocated bytes are new compressors") {
		t.Errorf("writer per call: fresh %.2f, fix %q", fresh, perCall.Fix)
	}
	pooled := diagnose(allocsOf(t, gzipPooled))
	t.Logf("allocated bytes in new compressors: %.2f per call, %.2f pooled", fresh, fact(pooled, "allocated bytes in new compressors (allocs profile)"))
	if f := fact(pooled, "allocated bytes in new compressors (allocs profile)"); f >= minFreshWriters || strings.Contains(pooled.Fix, "sync.Pool") {
		t.Errorf("pooled writers: fresh %.2f, fix %q", f, pooled.Fix)
	}
}

// allocsOf is the allocations of 200 calls of work alone: the allocs
// profile is cumulative over the test process, so the one before is
// subtracted.
func allocsOf(t *testing.T, work func()) *profile.Profile {
	before := testprof.Allocs(t, 0, func() {})
	after := testprof.Allocs(t, 200, work)
	before.Scale(-1)
	p, err := profile.Merge([]*profile.Profile{after, before})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func fact(f rules.Finding, name string) float64 {
	for _, e := range f.Evidence {
		if e.Name == name {
			return e.Num
		}
	}
	return 0
}

// serveGzipped is a file handler that gzips the file per request.
var static = bytes.Repeat(payload[:16<<10], 4)

func serveGzipped() {
	w := httptest.NewRecorder()
	zw := gzip.NewWriter(w)
	http.ServeContent(zw2rw{w, zw}, httptest.NewRequest("GET", "/app.js", nil), "app.js", time.Time{}, bytes.NewReader(static))
	zw.Close()
}

func TestStaticContentIsPrecompressed(t *testing.T) {
	f := one(t, run(testprof.CPU(t, 2*time.Second, 1, serveGzipped)))
	if !strings.Contains(f.Fix, "compress each once") || !strings.Contains(f.Fix, "9.2x") || f.Severity != rules.High {
		t.Errorf("static gzip: severity %s fix %q", f.Severity, f.Fix)
	}
	if !strings.HasPrefix(f.ImpactBasis, "compression of the same content once") {
		t.Errorf("impact basis %q", f.ImpactBasis)
	}
	if !f.RemovesWork {
		t.Error("content compressed once is compressed no more: a floor and no top")
	}
	// Compressing fresh content (archiveBest) gets no precompression advice, only its condition.
	g := one(t, run(testprof.CPU(t, 2*time.Second, 1, archiveBest)))
	if strings.Contains(g.Fix, "compress each once") || !strings.Contains(g.Fix, "If the same content is compressed again and again") {
		t.Errorf("fresh content: fix %q", g.Fix)
	}
	if !strings.Contains(g.Example, "BestCompression") {
		t.Errorf("BestCompression in the service's own code: example %q", g.Example)
	}
	if g.RemovesWork {
		t.Error("fresh content compressed at a lower level is compressed still: the range has a top")
	}
}

func TestDependencyCompressingGetsConfiguration(t *testing.T) {
	encode := "github.com/caddyserver/caddy/v2/modules/caddyhttp/encode.(*responseWriter).Write"
	cpu := testprof.Build(
		stack(800, kp+"flate.(*fastEncL5).Encode", kp+"flate.(*compressor).storeFast", kp+"flate.(*compressor).write", kp+"flate.(*Writer).Write", kp+"gzip.(*Writer).Write", encode,
			"net/http.serveContent", "github.com/caddyserver/caddy/v2/modules/caddyhttp/fileserver.(*FileServer).ServeHTTP"),
		stack(200, "main.work"),
	)
	ev := testprof.Evidence(map[evidence.Kind]*profile.Profile{evidence.CPU: cpu})
	ev.SystemEnd = &bundle.SystemSnapshot{Time: time.Now(), Process: &bundle.ProcessInfo{Build: &bundle.BuildInfo{Main: "github.com/caddyserver/caddy/v2"}, Executable: "/usr/bin/caddy"}}
	f := one(t, rules.Run(facts.New(ev), []*rules.Rule{Rule}))
	if !strings.Contains(f.Fix, "not yours to edit") || !strings.Contains(f.Fix, "precompressed gzip") || strings.Contains(f.Fix, "sync.Pool") {
		t.Errorf("caddy's own encoder: fix %q", f.Fix)
	}
	if fact := f.Evidence[len(f.Evidence)-1]; fact.Name != "whose code" || !strings.Contains(fact.Value, "third-party program") {
		t.Errorf("whose code: %+v", f.Evidence)
	}
	// A code edit the user cannot make (and a level already fast) is no example.
	if f.Example != "" {
		t.Errorf("packaged caddy at level 5 shown a code example: %q", f.Example)
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
