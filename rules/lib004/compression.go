// Package lib004 detects compression at a costly level dominating CPU
// (finding class compression-level).
package lib004

import (
	"fmt"
	"sort"
	"strings"

	"github.com/perfdoctor/perfdoctor/facts"
	"github.com/perfdoctor/perfdoctor/internal/human"

	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/rules"
)

// Rule is LIB004.
var Rule = &rules.Rule{
	ID:    "LIB004",
	Class: "compression-level",
	Doc: rules.Doc{
		Title: "Compression takes a large share of CPU",
		Text: `DEFLATE (gzip, zlib) spends most of its time searching earlier input for
matches; higher levels follow longer hash chains for a ratio that barely
improves. BestCompression can cost about twice the CPU of DefaultCompression
for a fraction of a percent of size, and faster implementations (klauspost's
flate, zstd, s2) exist for most uses. On a service that compresses every
response or message this is often the largest single cost.`,
		Evidence: `CPU share of samples in a compressor's write path: compress/flate's
(*compressor), (*Writer), deflateFast and Huffman writers under compress/gzip
and compress/zlib writers; github.com/klauspost/compress flate, gzip, zlib,
zstd encoders and gzhttp; klauspost/pgzip; andybalholm/brotli's Writer.
Decompression is not counted (its cost does not depend on the level), nor are
s2, snappy and lz4, which are already the fast tier. Graded by that share:
from 5% low, 10% medium, 25% high (a quarter of the CPU in one codec is never
a detail, whatever the level). The level is read only where the frames show
it: stdlib flate runs encSpeed at BestSpeed (1), storeHuff at HuffmanOnly and
deflate at every level from 2 to 9, so those cannot be told apart (findMatch's
share of deflate depends on the payload as much as on the level); klauspost's
flate shows levels 1-6 as fastEncL1..L6 and 7-9 as deflateLazy; its zstd shows
the speed by encoder type. Native codecs in perf's stacks count too: zlib
(named frames, or time in a stripped libz.so), zstd, brotli's encoder, lz4
and libdeflate; zlib's deflate_slow (levels 4-9) is a costly level, and for
nginx the prescription is nginx's (gzip_static, gzip_comp_level). The allocs profile (when present) gives the share
of allocated bytes in new compressors (flate.NewWriter, compressor.init): from
30% a writer is built per call. Compression under file serving (net/http's
ServeContent/ServeFile/FileServer, caddy's file_server) compresses the same
bytes on every request. The code calling the compressor is named, and whose
code it is (rules.Owners) decides between a code change and configuration.`,
		Fix: `Each when its condition holds, the largest saving first. Static content
compressed per request: compress it once and serve the stored copy
(precompressed .gz/.br files, or a cache of compressed bodies); serving
precompressed gave 9.2x the throughput on a caddy-like static gzip service,
and BenchmarkStaticFile here measures a 116 KB script's handler at 44x less
CPU per request (3.5 ms -> 0.08 ms).
A writer created per call: keep writers in a sync.Pool and Reset them
(BenchmarkWriterPerCall: 814 KB and 17 allocations per call become none,
and 31% less CPU on a 64 KB response). A
level above BestSpeed: lower it, by this table measured here: ` + levelTableText + `
Or use github.com/klauspost/compress's drop-in packages, zstd or s2 where
both ends are yours, and skip payloads too small or already compressed. When
the compressing code is a dependency's or a packaged program's, the
prescription is its configuration (a level setting, precompressed files,
caddy's encode and file_server precompressed) rather than a code edit.`,
		Before:  `zw, _ := zlib.NewWriterLevel(&buf, zlib.BestCompression)`,
		After:   `zw, _ := zlib.NewWriterLevel(&buf, zlib.DefaultCompression) // or klauspost/compress/zlib`,
		Caveats: caveat,
		Since:   "0.1",
		Refs: []string{
			"https://pkg.go.dev/compress/flate#pkg-constants",
			"https://github.com/klauspost/compress",
		},
	},
	Needs: []rules.Input{rules.CPU},
	Uses:  []rules.Input{rules.Allocs},
	Facts: []facts.Key{facts.AllocStacks, facts.CPUStacks, facts.Owners, facts.SystemFrames, facts.WindowAllocs},
	Check: check,
}

const caveat = "A lower level sends more bytes: where bandwidth or storage is the bottleneck rather than CPU, the trade may go the other way. Measure both on real payloads."

const (
	kp    = "github.com/klauspost/compress/"
	flate = "compress/flate."
)

var (
	stdFrames = evidence.FuncPrefix(
		flate+"(*compressor).", flate+"(*Writer).", flate+"NewWriter", flate+"(*dictWriter).",
		flate+"(*deflateFast).", flate+"(*huffmanBitWriter).", flate+"(*huffmanEncoder).",
		"compress/gzip.(*Writer).", "compress/zlib.(*Writer).", "compress/zlib.NewWriter", "compress/gzip.NewWriter",
	)
	kpFrames = evidence.FuncPrefix(
		kp+"flate.(*compressor).", kp+"flate.(*Writer).", kp+"flate.NewWriter", kp+"flate.(*fastEncL", kp+"flate.(*fastGen)",
		kp+"flate.(*huffmanBitWriter).", kp+"flate.(*huffmanEncoder).", kp+"flate.StatelessDeflate",
		kp+"gzip.(*Writer).", kp+"zlib.(*Writer).", kp+"zstd.(*Encoder).",
		// gzhttp's compressing writer, not its handler wrapper: every
		// response passes the wrapper, and one not compressed (no
		// Accept-Encoding, too small, an empty 204) costs no compression.
		kp+"gzhttp.(*GzipResponseWriter).", kp+"gzhttp/writer/",
		kp+"zstd.(*fastEncoder", kp+"zstd.(*doubleFastEncoder", kp+"zstd.(*betterFastEncoder", kp+"zstd.(*bestFastEncoder",
		kp+"zstd.(*blockEnc).", "github.com/klauspost/pgzip.(*Writer).",
	)
	brotliFrames = evidence.FuncPrefix("github.com/andybalholm/brotli.(*Writer).", "github.com/andybalholm/brotli.NewWriter")

	// Frames is every compressor's write path.
	Frames = evidence.Any(stdFrames, kpFrames, brotliFrames)

	setupFrames = evidence.Any(
		evidence.FuncPrefix(flate+"NewWriter", flate+"(*compressor).init", "compress/zlib.NewWriter", "compress/gzip.NewWriter"),
		evidence.FuncPrefix(kp+"flate.NewWriter", kp+"flate.(*compressor).init", kp+"zstd.NewWriter"),
	)
	compressLibs = evidence.Any(Frames, evidence.FuncPrefix("github.com/klauspost/", "github.com/andybalholm/brotli"))
)

// variant is a compressor and level family recognisable from its frames.
type variant struct {
	frames evidence.Matcher
	level  string
	high   bool   // a costly level: lowering it saves about half
	lower  string // how to lower the level; "" when it is already the fastest
}

const (
	kpDropIn = "github.com/klauspost/compress's drop-in gzip, zlib and flate packages (several times faster at similar ratios)"
	measure  = " Measure ratio and CPU on the service's own payloads before choosing."
)

var variants = []variant{
	{frames: evidence.FuncPrefix(flate + "(*compressor).deflate"),
		level: "compress/flate at a level from 2 to 9: the profile cannot tell which (deflate and findMatch run at every one of them, and their shares depend on the payload as much as on the level)",
		lower: "Lower the level: " + levelTableText + " Or switch to " + kpDropIn + "."},
	{frames: evidence.FuncPrefix(flate+"(*compressor).encSpeed", flate+"(*deflateFast)."), level: "compress/flate BestSpeed (1)"},
	{frames: evidence.FuncPrefix(flate + "(*compressor).storeHuff"), level: "compress/flate HuffmanOnly (-2)"},
	{frames: evidence.FuncPrefix(kp + "flate.(*compressor).deflateLazy"), level: "klauspost/compress flate level 7-9", high: true,
		lower: "Levels 7-9 run klauspost's lazy matcher; levels 5-6 (fastEncL5/L6) compress nearly as well at a fraction of the CPU: use level 5 or 6 (DefaultCompression is 5 in klauspost/compress)."},
	{frames: evidence.FuncPrefix(kp + "zstd.(*bestFastEncoder"), level: "zstd SpeedBestCompression", high: true,
		lower: "Use zstd.WithEncoderLevel(zstd.SpeedDefault) or SpeedBetterCompression."},
	{frames: evidence.FuncPrefix(kp + "zstd.(*betterFastEncoder"), level: "zstd SpeedBetterCompression", high: true,
		lower: "Use zstd.WithEncoderLevel(zstd.SpeedDefault) or SpeedFastest."},
	{frames: evidence.FuncPrefix(kp+"zstd.(*doubleFastEncoder", kp+"zstd.(*fastEncoder"), level: "zstd SpeedDefault or SpeedFastest"},
	{frames: brotliFrames, level: "brotli (quality not visible)",
		lower: "Lower the brotli quality for dynamic content (brotli.WriterOptions{Quality: 4-5}; 11 is meant for assets compressed once), or use gzip via klauspost/compress or zstd."},
}

// klauspost flate's fast encoders carry the level in their names.
var kpLevels = func() []variant {
	var vs []variant
	for l := 1; l <= 6; l++ {
		vs = append(vs, variant{frames: evidence.FuncPrefix(fmt.Sprintf("%sflate.(*fastEncL%d", kp, l)), level: fmt.Sprintf("klauspost/compress flate level %d", l)})
	}
	return vs
}()

// levelTableText is compress/flate per level on payloads services send,
// measured with BenchmarkLevels (one reused writer; best of four runs on a
// shared 2-core x86-64 machine, Go 1.26).
const levelTableText = "compress/flate at levels 1 / 4 / 6 / 9 compresses a 64 KB JSON API response at 176 / 143 / 72 / 40 MB/s " +
	"to ratios 4.92 / 5.61 / 6.29 / 6.58, 128 KB of HTML at 187 / 115 / 49 / 25 MB/s to 2.56 / 2.98 / 3.06 / 3.06, " +
	"and 116 KB of minified JavaScript at 130 / 83 / 43 / 34 MB/s to 2.94 / 3.39 / 3.52 / 3.53 (BenchmarkLevels): " +
	"from 9 to 6 saves 21-49% of the CPU for 0.2-5% more bytes, from 6 to 4 about half again for 3-12% more, and 1 is the fastest."

// staticFrames serve files: compressing under them compresses the same
// bytes on every request.
var staticFrames = evidence.FuncPrefix(
	"net/http.serveFile", "net/http.serveContent", "net/http.ServeContent", "net/http.ServeFile", "net/http.(*fileHandler).",
	"github.com/caddyserver/caddy/v2/modules/caddyhttp/fileserver.",
	"github.com/gofiber/fiber/v2/middleware/filesystem.", "github.com/labstack/echo/v4.(*Context).File", "github.com/gin-gonic/gin.(*Context).File",
)

const (
	minShare    = 0.05
	mediumShare = 0.10
	highShare   = 0.25 // a quarter of the CPU in one codec is never a detail
	// minStatic is the share of the compression under file serving from
	// which the content is taken to be compressed again and again.
	minStatic = 0.5
	// minFreshWriters is the share of allocated bytes in new compressors
	// from which writer reuse is prescribed. A pool refills after each GC
	// (sync.Pool drops its contents over two cycles), so pooled writers
	// still show 13% in a test process that allocates a 64 KB body per
	// call with a 4 MB heap; a writer per call shows 92%.
	minFreshWriters = 0.30

	// Lowering a level: 9 -> 6 and 6 -> 1 save 44% and 59% by the table
	// above, and casebook C1's BestCompression -> DefaultCompression cut
	// CPU per request by 61% (casebook/README.md, calibration).
	recoverHigh  = 0.6 // a high level lowered, as in case C1
	recoverLower = 0.5 // a level the frames cannot place (flate 2-9) lowered
	recoverOther = 0.3 // a faster implementation, or writers pooled
	// recoverCache: content compressed once instead of per request costs no
	// compression at all, so the fix removes all of the compression under
	// file serving. A caddy-like static gzip service gained 9.2x in
	// throughput (89% of all its CPU), BenchmarkStaticFile's handler 44x in
	// CPU per request, and Debian's Caddy with encode gzip 9 (corpus) 17.7x
	// with 94% of its CPU in compression: the share removed was the whole
	// of it, not less.
	recoverCache = 1.0
)

// freshWriters is the share of the allocs profile's bytes allocated by new
// compressors: a writer built per call (flate.NewWriter, gzip's first Write
// without Reset) allocates ~1 MB of hash tables at levels 2-9.
func freshWriters(ev *evidence.Evidence, window facts.Allocations) (float64, bool) {
	p := ev.Profile(evidence.Allocs)
	if w, ok := window.Profile, window.InWindow; ok {
		p = w
	}
	st := evidence.NewStacks(p, "alloc_space")
	if st == nil || st.Total == 0 {
		return 0, false
	}
	return st.Share(setupFrames), true
}

func check(pass *rules.Pass) error {
	if !pass.EnoughCPU() {
		return nil
	}
	ev := pass.Evidence
	cpu := facts.Get(pass.Facts, facts.CPUStacks)
	share := cpu.Share(Frames)
	if share < minShare {
		checkNative(pass, cpu)
		return nil
	}
	var best variant
	var bestShare float64
	for _, v := range append(append([]variant{}, variants...), kpLevels...) {
		if s := cpu.Share(v.frames); s > bestShare {
			best, bestShare = v, s
		}
	}
	if bestShare == 0 {
		best = variant{level: "not visible in the frames", lower: "Lower the level, or switch to " + kpDropIn + "."}
	}
	shown := []rules.Fact{
		rules.Share("compression share of CPU", share),
		rules.Text("level (from the frames)", best.level),
	}
	inCompression := cpu.Has(Frames)
	underStatic := cpu.Has(staticFrames)
	// A compressor's Close or Flush emits what the writes before it queued,
	// after the file server has returned (caddy's encode middleware closes
	// the writer once file_server is done): it goes with those writes, so
	// the share under file serving is of the compression outside them.
	finishing := cpu.Has(func(fn string) bool {
		return Frames(fn) && (strings.HasSuffix(fn, ".Close") || strings.HasSuffix(fn, ".Flush"))
	})
	static := cpu.ShareWhere(func(s evidence.Sample) bool { return inCompression(s) && underStatic(s) })
	if writes := cpu.ShareWhere(func(s evidence.Sample) bool { return inCompression(s) && !finishing(s) }); writes > 0 {
		static = min(static/writes, 1)
	}
	if static > 0 {
		shown = append(shown, rules.Share("of the compression under file serving (the same bytes each time)", static))
	}
	setup := cpu.Share(setupFrames)
	if setup > 0 {
		shown = append(shown, rules.Share("CPU in compressor set-up (NewWriter per call)", setup))
	}
	fresh, haveAllocs := freshWriters(ev, facts.Get(pass.Facts, facts.WindowAllocs))
	if fresh > 0 {
		shown = append(shown, rules.Share("allocated bytes in new compressors (allocs profile)", fresh))
	}

	// Each prescription is given when its condition holds, the largest
	// saving first; the impact is the saving of the first.
	type remedy struct {
		code, config string
		rate         float64
		basis        string
	}
	var rx []remedy
	if static >= minStatic {
		rx = append(rx, remedy{
			code:   fmt.Sprintf("The same files are compressed on every request (%s of the compression is under file serving): compress each once and serve the stored copy, e.g. .gz/.br files written at build time and served for Accept-Encoding, or a cache of compressed bodies keyed by path and modification time. Serving precompressed gave 9.2x the throughput on a caddy-like static gzip service.", human.Percent(static)),
			config: "Serve precompressed files where the server supports it (caddy: file_server { precompressed gzip br } with the .gz/.br files generated at deploy time), or cache compressed responses in front of it.",
			rate:   recoverCache, basis: "compression of the same content once instead of per request removes all of the compression under file serving (a caddy-like static gzip service: 9.2x the throughput; Caddy with encode gzip 9: 17.7x); where a lower level is chosen instead, 60% of it, the low end of the range",
		})
	}
	if fresh >= minFreshWriters || setup >= 0.01 {
		why := human.Percent(setup) + " of CPU in set-up"
		if fresh >= minFreshWriters {
			why = human.Percent(fresh) + " of allocated bytes are new compressors"
		}
		rx = append(rx, remedy{
			code:   fmt.Sprintf("A writer is created per call (%s; a flate writer allocates ~1 MB at levels 2-9): keep writers in a sync.Pool and Reset them onto each new destination.", why),
			config: fmt.Sprintf("The compressor is created per call (%s) inside code you do not maintain: raise it with its maintainers or pick a library or setting that pools writers.", why),
			rate:   recoverOther, basis: "new writers per call: pooling removes their set-up and allocation, 31% of the compression CPU of a 64 KB response at DefaultCompression (BenchmarkWriterPerCall)",
		})
	}
	switch {
	case best.lower != "":
		rate, basis := recoverLower, "share of CPU in compressors' write paths; lowering the level saves about half of it (flate 9 -> 6: 44%, 6 -> 1: 59%; case C1's 9 -> 6 cut CPU per request by 61%)"
		if best.high {
			rate, basis = recoverHigh, "share of CPU in compressors' write paths; lowering a high level cut CPU per request by 61% in case C1 (BestCompression -> DefaultCompression)"
		}
		rx = append(rx, remedy{code: best.lower + measure,
			config: "Set a lower compression level in its configuration (caddy: encode { gzip 1 }; most servers and proxies have a level setting), or prefer a faster encoding the clients accept (zstd)." + measure,
			rate:   rate, basis: basis})
	default:
		faster := "lower the level further if the ratio allows, use zstd or s2 where both ends are yours"
		if strings.HasPrefix(best.level, "compress/flate") {
			faster = "switch to " + kpDropIn + ", or zstd/s2 where both ends are yours"
		}
		rx = append(rx, remedy{
			code:   best.level + " is already a fast setting: " + faster + ", and skip payloads that are small or already compressed (images, archives)." + measure,
			config: "It already runs a fast setting: turn compression off for small or already-compressed content types, or choose an encoding the clients accept that costs less.",
			rate:   recoverOther, basis: "share of CPU in compressors' write paths; a faster implementation typically saves about 30% of it"})
	}
	sort.SliceStable(rx, func(i, j int) bool { return rx[i].rate > rx[j].rate })

	app := func(fn string) bool { return rules.IsApplication(fn) && !compressLibs(fn) }
	callers := cpu.TopSites(5, cpu.CallerOf(Frames, app))
	var code, config []string
	for _, r := range rx {
		code, config = append(code, r.code), append(config, r.config)
	}
	fix := strings.Join(code, " ")
	editable := true
	if len(callers) > 0 {
		var whose rules.Fact
		fix, whose, editable = rules.Advise(facts.Get(pass.Facts, facts.Owners), callers[0].Frame, fix, strings.Join(config, " "))
		shown = append(shown, whose)
	}
	if static < minStatic {
		fix += " If the same content is compressed again and again (static files, a cached response), compress it once and keep the compressed bytes."
	}
	var caveats []string
	caveats = append(caveats, caveat)
	if !haveAllocs {
		caveats = append(caveats, "No allocs profile: whether writers are created per call is read from CPU in set-up only.")
	}
	impact := share * rx[0].rate
	if static >= minStatic {
		// Precompressing removes the compression under file serving; the
		// rest, dynamic content, at best what a lower level saves.
		impact = share * (static*recoverCache + (1-static)*recoverHigh)
	}
	f := rules.Finding{
		Severity:    rules.Grade(share, mediumShare, highShare),
		Impact:      impact,
		Resource:    "cpu",
		ImpactBasis: rx[0].basis,
		Summary:     fmt.Sprintf("Compression uses %s of CPU (%s)", human.Percent(share), shortLevel(best.level)),
		Evidence:    shown,
		Fix:         fix,
		Caveats:     caveats,
		Locations:   rules.Locations(callers, "code compressing"),
		Frames:      cpu.Matched(Frames, 12),
	}
	if static >= minStatic {
		f.ImpactRange = &[2]float64{share * recoverHigh, impact}
		f.RemovesWork = true // content compressed once is compressed no more
	}
	if best.lower != "" && editable {
		// The rule's example lowers a high level in code: shown only where
		// that is the edit to make.
		f.Example = pass.Rule.Doc.Before + "\n->\n" + pass.Rule.Doc.After
	}
	if len(callers) > 0 {
		f.Summary += ", called from " + rules.ShortFunc(callers[0].Func)
	}
	f.Claim = &rules.Claim{Level: rules.LevelCode, CPU: cpu.Has(Frames), Allocs: facts.Get(pass.Facts, facts.AllocStacks).Has(Frames)}
	pass.Report(f)
	return nil
}

// shortLevel is the level's reading without its explanation.
func shortLevel(level string) string {
	head, _, _ := strings.Cut(level, ":")
	return head
}
