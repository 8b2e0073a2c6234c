package lib004

import (
	"fmt"

	"github.com/perfdoctor/perfdoctor/facts"
	"github.com/perfdoctor/perfdoctor/internal/human"

	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/facts/frames"
	"github.com/perfdoctor/perfdoctor/rules"
)

// nativeVariants are native codecs seen through perf, most specific first:
// zlib's level shows in its frames only when the library has symbols
// (deflate_slow runs levels 4-9, deflate_fast 1-3); a stripped libz.so is
// only "[unknown] libz.so.1.2.13".
var nativeVariants = []variant{
	{frames: evidence.FuncPrefix("deflate_slow", "longest_match"), level: "zlib deflate_slow (levels 4-9)", high: true},
	{frames: evidence.FuncPrefix("deflate_fast"), level: "zlib deflate_fast (levels 1-3)"},
	{frames: frames.NativeZlib, level: "zlib (libz.so has no symbols for its internals, so the level is not visible)"},
	{frames: frames.NativeZstdCompress, level: "zstd (native library; level not visible)"},
	{frames: frames.NativeBrotliEncode, level: "brotli encoder (native library; quality not visible)"},
	{frames: frames.NativeLZ4, level: "lz4 (native library), already a fast codec"},
}

// nativeFix is the prescription for a native codec, by the process that runs it.
func nativeFix(comm string, v variant) string {
	switch comm {
	case "nginx":
		return "nginx compresses responses on every request: serve precompressed files for static content " +
			"(gzip_static on, with .gz files written once at deploy time by gzip -9 or zopfli), and lower " +
			"gzip_comp_level for dynamic content (1-4; the default is 1, and levels above 5 cost much more CPU " +
			"for a few percent of size). Keep gzip_min_length high enough to skip small responses, and " +
			"gzip_types to text that compresses." + measure
	case "redis-server", "postgres", "mysqld", "mariadbd":
		return "Check the server's compression setting (level and which data it applies to) and compress less often or at a lower level." + measure
	}
	switch {
	case v.high:
		return "Lower the zlib level (deflateInit2's level; 6 is the default, 1-3 run deflate_fast) or switch to zstd or libdeflate, and cache compressed forms of content that does not change." + measure
	}
	return "Lower the codec's level, cache compressed forms of content that does not change, skip small or already-compressed payloads, " +
		"or move to a faster codec (zstd at a low level, libdeflate, lz4) where both ends allow it." + measure
}

// checkNative reports a native codec's share of perf's on-CPU samples. It
// returns whether it reported.
func checkNative(pass *rules.Pass, cpu *evidence.Stacks) bool {
	share := cpu.Share(frames.NativeCompression)
	if share < minShare {
		return false
	}
	var best variant
	var bestShare float64
	for _, v := range nativeVariants {
		if s := cpu.Share(v.frames); s > bestShare {
			best, bestShare = v, s
		}
	}
	comm := ""
	if s := pass.Evidence.SystemEnd; s != nil && s.Process != nil {
		comm = s.Process.Comm
	}
	rate, basis := recoverOther, "share of on-CPU samples in a native codec; serving precompressed content or a lower level typically saves at least 30% of it"
	if best.high || comm == "nginx" {
		rate, basis = recoverHigh, "share of on-CPU samples in a native codec; a lower level or precompressed static content saves at least half of it"
	}
	impact := share * rate
	sev := rules.SeverityFor(impact)
	if !best.high && comm != "nginx" {
		// The level is not known: an opportunity, not a proven misconfiguration.
		sev = min(sev, rules.Medium)
	}
	unsym := frames.LeafShare(cpu, frames.Unsymbolized)
	shown := []rules.Fact{
		rules.Share("native compression share of CPU (perf)", share),
		rules.Text("codec and level (from the frames)", best.level),
	}
	if comm != "" {
		shown = append(shown, rules.Text("process", comm))
	}
	caveats := []string{caveat}
	if unsym > 0.2 {
		caveats = append(caveats, fmt.Sprintf("%s of the samples end in unsymbolized frames: the codec is known from the library file, "+
			"not from its functions, so the level and the caller are not visible. To see them, %s (zlib1g-dbgsym for zlib).", human.Percent(unsym), frames.SymbolizeAdvice))
	}
	f := rules.Finding{
		Severity:    sev,
		Impact:      impact,
		Resource:    "cpu",
		ImpactBasis: basis,
		Summary:     fmt.Sprintf("Compression uses %s of CPU in a native library (%s)", human.Percent(share), best.level),
		Evidence:    shown,
		Fix:         nativeFix(comm, best),
		Caveats:     caveats,
		Frames:      cpu.Matched(frames.NativeCompression, 12),
	}
	if comm == "nginx" {
		f.Example = "gzip_comp_level 9;\n->\ngzip_static on;      # serves page.html.gz, written once at deploy\ngzip_comp_level 1;   # for what is compressed per response"
	}
	app := func(fn string) bool {
		return !frames.Unsymbolized(fn) && !facts.Get(pass.Facts, facts.SystemFrames)(fn)
	}
	if callers := cpu.TopSites(5, cpu.CallerOf(frames.NativeCompression, app)); len(callers) > 0 {
		f.Locations = rules.Locations(callers, "code compressing")
		f.Summary += ", called from " + rules.ShortFunc(callers[0].Func)
	}
	f.Claim = &rules.Claim{Level: rules.LevelCode, CPU: cpu.Has(frames.NativeCompression)}
	pass.Report(f)
	return true
}
