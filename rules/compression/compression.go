// Package compression detects compression at a costly level dominating CPU
// (finding class compression-level).
package compression

import (
	"fmt"

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
s2, snappy and lz4, which are already the fast tier. The level is read from
the frames where they show it: stdlib flate runs encSpeed at BestSpeed (1)
and deflate at levels 2-9, and the level number itself is not in the profile;
the share of deflate's time in findMatch hints at the hash-chain length (80%
and above is typical of levels 7-9 on text). klauspost's flate shows levels
1-6 as fastEncL1..L6 and 7-9 as deflateLazy; its zstd shows the speed by
encoder type. Native codecs in perf's stacks count too: zlib (named
frames, or time in a stripped libz.so), zstd, brotli's encoder, lz4 and
libdeflate; zlib's deflate_slow (levels 4-9) is a costly level, and for nginx
the prescription is nginx's (gzip_static, gzip_comp_level). Reports from 5% of CPU; below a high level (or where the level
is unknown) the severity is at most low: a faster codec is an opportunity, not
a misconfiguration.`,
		Fix: `Lower the level or use a faster codec, chosen by measuring ratio and CPU on
the service's own payloads: DefaultCompression (6) or lower instead of
BestCompression (in case C1, ~0.1% of ratio for ~50% of the compression CPU);
github.com/klauspost/compress's drop-in gzip/zlib/flate packages; zstd or s2
where both ends are yours. Reuse writers (Reset, sync.Pool) rather than
creating one per call, and skip payloads too small or already compressed.`,
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
		kp+"gzip.(*Writer).", kp+"zlib.(*Writer).", kp+"gzhttp.", kp+"zstd.(*Encoder).",
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
	findMatch = evidence.FuncPrefix(flate + "(*compressor).findMatch")

	compressLibs = evidence.Any(Frames, evidence.FuncPrefix("github.com/klauspost/", "github.com/andybalholm/brotli"))
)

// variant is a compressor and level family recognisable from its frames.
type variant struct {
	frames evidence.Matcher
	level  string
	high   bool // a costly level: lowering it is the fix
	fix    string
	chain  bool // stdlib deflate: refine the level from findMatch's share
}

const (
	measure    = " Measure ratio and CPU on the service's own payloads before choosing."
	kpDropIn   = "github.com/klauspost/compress's drop-in gzip, zlib and flate packages (several times faster at similar ratios)"
	faster     = " or zstd (klauspost/compress/zstd) or s2 where both ends are yours."
	stdHighFix = "Use DefaultCompression (6) or lower instead of a high level: in case C1 BestCompression -> DefaultCompression " +
		"lost ~0.1% of ratio and saved ~50% of the compression CPU. Or switch to " + kpDropIn + "," + faster + measure
)

var variants = []variant{
	{frames: evidence.FuncPrefix(flate + "(*compressor).deflate"), level: "compress/flate level 2-9 (the profile does not show which)", chain: true,
		fix: "Lower the level towards BestSpeed (1) if the ratio allows, or switch to " + kpDropIn + "," + faster + measure},
	{frames: evidence.FuncPrefix(flate+"(*compressor).encSpeed", flate+"(*deflateFast)."), level: "compress/flate BestSpeed (1)",
		fix: "This is already the standard library's fastest level: switch to " + kpDropIn + "," + faster +
			" Or compress less: skip small or already-compressed payloads and cache compressed forms of static content." + measure},
	{frames: evidence.FuncPrefix(flate + "(*compressor).storeHuff"), level: "compress/flate HuffmanOnly (-2)",
		fix: "HuffmanOnly is already cheap: compress less (skip small or incompressible payloads) or use s2/snappy." + measure},
	{frames: evidence.FuncPrefix(kp + "flate.(*compressor).deflateLazy"), level: "klauspost/compress flate level 7-9", high: true,
		fix: "Levels 7-9 run klauspost's lazy matcher; levels 5-6 (fastEncL5/L6) compress nearly as well at a fraction of the CPU: " +
			"use flate/gzip/zlib level 5 or 6 (DefaultCompression is 5 in klauspost/compress)." + measure},
	{frames: evidence.FuncPrefix(kp + "zstd.(*bestFastEncoder"), level: "zstd SpeedBestCompression", high: true,
		fix: "Use zstd.WithEncoderLevel(zstd.SpeedDefault) or SpeedBetterCompression; reuse one Encoder (EncodeAll) rather than one per call." + measure},
	{frames: evidence.FuncPrefix(kp + "zstd.(*betterFastEncoder"), level: "zstd SpeedBetterCompression", high: true,
		fix: "Use zstd.WithEncoderLevel(zstd.SpeedDefault) or SpeedFastest; reuse one Encoder (EncodeAll) rather than one per call." + measure},
	{frames: evidence.FuncPrefix(kp+"zstd.(*doubleFastEncoder", kp+"zstd.(*fastEncoder"), level: "zstd SpeedDefault or SpeedFastest",
		fix: "zstd is already at a fast setting: try zstd.SpeedFastest or s2, reuse one Encoder (EncodeAll), and skip small or incompressible payloads." + measure},
	{frames: brotliFrames, level: "brotli (quality not visible)",
		fix: "Lower the brotli quality for dynamic content (brotli.WriterOptions{Quality: 4-5}; 11 is meant for static assets compressed once), or use gzip via klauspost/compress or zstd." + measure},
}

// klauspost flate's fast encoders carry the level in their names.
var kpLevels = func() []variant {
	var vs []variant
	for l := 1; l <= 6; l++ {
		vs = append(vs, variant{frames: evidence.FuncPrefix(fmt.Sprintf("%sflate.(*fastEncL%d", kp, l)), level: fmt.Sprintf("klauspost/compress flate level %d", l),
			fix: "klauspost's flate at level 1-6 is already a fast encoder: lower the level further if the ratio allows, use zstd or s2 where both ends are yours, and skip small or incompressible payloads." + measure})
	}
	return vs
}()

const (
	minShare     = 0.05
	highChain    = 0.80 // findMatch share of stdlib deflate typical of levels 7-9
	midChain     = 0.50
	recoverHigh  = 0.5 // a high level lowered, as in case C1
	recoverOther = 0.3 // a faster implementation or lower level
)

func check(pass *rules.Pass) error {
	if !pass.EnoughCPU() {
		return nil
	}
	cpu := pass.Evidence.CPUStacks()
	share := cpu.Share(Frames)
	if share < minShare {
		checkNative(pass, cpu)
		return nil
	}
	var best *variant
	var bestShare float64
	for _, v := range append(append([]variant{}, variants...), kpLevels...) {
		if s := cpu.Share(v.frames); s > bestShare {
			v := v
			best, bestShare = &v, s
		}
	}
	if best == nil {
		best = &variant{level: "not visible in the frames", fix: "Lower the level or switch to " + kpDropIn + "," + faster + measure}
	}
	facts := []rules.Fact{rules.Share("compression share of CPU", share)}
	// stdlib deflate: the hash-chain search's share hints at the level.
	if best.chain {
		chain := cpu.Share(findMatch) / bestShare
		facts = append(facts, rules.Share("findMatch share of deflate (hash-chain search)", chain))
		switch {
		case chain >= highChain:
			best.level = "compress/flate, likely a high level (7-9, BestCompression is 9): the level number is not in the profile, but findMatch takes " + rules.Percent(chain) + " of deflate"
			best.high = true
			best.fix = stdHighFix
		case chain >= midChain:
			best.level = "compress/flate, likely a middle level (4-6, DefaultCompression is 6): findMatch takes " + rules.Percent(chain) + " of deflate"
		default:
			best.level = "compress/flate, likely a low level (2-3): findMatch takes " + rules.Percent(chain) + " of deflate"
		}
	}
	facts = append(facts, rules.Text("level (from the frames)", best.level))
	setup := cpu.Share(setupFrames)
	if setup > 0 {
		facts = append(facts, rules.Share("writer set-up (NewWriter per call)", setup))
	}

	rate, basis := recoverOther, "share of CPU in compressors' write paths; a faster implementation or a lower level typically saves about 30% of it"
	if best.high {
		rate, basis = recoverHigh, "share of CPU in compressors' write paths; lowering a high level saved ~50% of it in case C1 (BestCompression -> DefaultCompression)"
	}
	impact := share * rate
	sev := rules.SeverityFor(impact)
	if !best.high {
		// Not a costly level: a faster codec is an opportunity, not a
		// misconfiguration.
		sev = min(sev, rules.Low)
	}

	app := func(fn string) bool { return rules.IsApplication(fn) && !compressLibs(fn) }
	callers := cpu.TopSites(5, cpu.CallerOf(Frames, app))
	fix := best.fix
	if setup >= 0.01 {
		fix += " Writers are created per call (" + rules.Percent(setup) + " of CPU in set-up, and each flate writer allocates ~1 MB at levels 2-9): reuse them with Reset from a sync.Pool."
	}
	f := rules.Finding{
		Severity:    sev,
		Impact:      impact,
		Resource:    "cpu",
		ImpactBasis: basis,
		Summary:     fmt.Sprintf("Compression uses %s of CPU (%s)", rules.Percent(share), best.level),
		Evidence:    facts,
		Fix:         fix,
		Example:     pass.Rule.Doc.Before + "\n->\n" + pass.Rule.Doc.After,
		Caveats:     []string{caveat},
		Locations:   rules.Locations(callers, "code compressing"),
		Frames:      cpu.Matched(Frames, 12),
	}
	if len(callers) > 0 {
		f.Summary += ", called from " + rules.ShortFunc(callers[0].Func)
	}
	pass.Report(f)
	return nil
}
