package lib004

import (
	"fmt"
	"strings"

	"github.com/perfdoctor/perfdoctor/facts"
	"github.com/perfdoctor/perfdoctor/internal/human"

	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/facts/frames"
	"github.com/perfdoctor/perfdoctor/rules"
)

// nativeVariants are native codecs seen through perf, most specific first:
// zlib's level shows in its frames only when the library has symbols
// (deflate_slow runs levels 4-9, deflate_fast 1-3); a stripped libz.so is
// only "[unknown] libz.so.1.2.13". Each names the library file its frames
// come from and the Debian package carrying that library's symbols.
var nativeVariants = []nativeVariant{
	{variant: variant{frames: evidence.FuncPrefix("deflate_slow", "longest_match"), level: "zlib deflate_slow (levels 4-9)", high: true}, library: "libz.so", dbgsym: "zlib1g-dbgsym"},
	{variant: variant{frames: evidence.FuncPrefix("deflate_fast"), level: "zlib deflate_fast (levels 1-3)"}, library: "libz.so", dbgsym: "zlib1g-dbgsym"},
	{variant: variant{frames: frames.NativeLibdeflate, level: "libdeflate (already the fastest DEFLATE; level not visible)"}, library: "libdeflate.so", dbgsym: "libdeflate0-dbgsym"},
	{variant: variant{frames: frames.NativeZlib, level: "zlib (libz.so has no symbols for its internals, so the level is not visible)"}, library: "libz.so", dbgsym: "zlib1g-dbgsym"},
	{variant: variant{frames: frames.NativeZstdCompress, level: "zstd (native library; level not visible)"}, library: "libzstd.so", dbgsym: "libzstd1-dbgsym"},
	{variant: variant{frames: frames.NativeBrotliEncode, level: "brotli encoder (native library; quality not visible)"}, library: "libbrotlienc.so", dbgsym: "libbrotli1-dbgsym"},
	{variant: variant{frames: frames.NativeLZ4, level: "lz4 (native library), already a fast codec"}, library: "liblz4.so", dbgsym: "liblz4-1-dbgsym"},
}

// nativeVariant is a native codec: its frames, and the library they are in.
type nativeVariant struct {
	variant
	library string // the file name's start, as perf shows a stripped frame
	dbgsym  string // Debian's package with the library's symbols
}

// libraryFile is the mapped file a codec's samples were in, as perf named
// it ("libz.so.1.2.13" from "[unknown] libz.so.1.2.13"), or the library's
// name when its frames had symbols.
func libraryFile(cpu *evidence.Stacks, v nativeVariant) string {
	for _, fn := range cpu.Matched(v.frames, 50) {
		if name, ok := strings.CutPrefix(fn, "[unknown] "); ok && strings.HasPrefix(name, v.library) {
			return name
		}
	}
	return v.library
}

// nativeFix is the prescription for a native codec, by the process that runs it.
func nativeFix(comm string, v nativeVariant) string {
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
	case v.library == "libdeflate.so":
		return "libdeflate is already the fastest DEFLATE: cache or precompress responses that do not change, " +
			"lower the compression level it is called with (1-6), and skip small or already-compressed payloads." + measure
	case v.high:
		return "Lower the zlib level (deflateInit2's level; 6 is the default, 1-3 run deflate_fast) or switch to zstd or libdeflate, and cache compressed forms of content that does not change." + measure
	}
	return "Lower the codec's level, cache compressed forms of content that does not change, skip small or already-compressed payloads, " +
		"or move to a faster codec (zstd at a low level, libdeflate, lz4) where both ends allow it." + measure
}

// jvmStaticFrames serve files from a JVM server: a codec under them
// compresses the same bytes on every request.
var jvmStaticFrames = evidence.FuncPrefix(
	"org.eclipse.jetty.server.ResourceService.", "org.eclipse.jetty.ee10.servlet.DefaultServlet.", "org.eclipse.jetty.servlet.DefaultServlet.",
	"org.apache.catalina.servlets.DefaultServlet.", "io.undertow.server.handlers.resource.ResourceHandler.",
)

// underStaticServing is the share of the native codec's samples under a
// JVM server's file serving.
func underStaticServing(cpu *evidence.Stacks) float64 {
	codec, static := cpu.Has(frames.NativeCompression), cpu.Has(jvmStaticFrames)
	all := cpu.Share(frames.NativeCompression)
	if all == 0 {
		return 0
	}
	return cpu.ShareWhere(func(s evidence.Sample) bool { return codec(s) && static(s) }) / all
}

// mostSpecific is the first of nativeVariants (most specific first) whose
// frames hold at least half of the native codec's samples, else the one
// holding most. The generic frames sit above the specific ones on the same
// stacks (the JDK's Deflater entry above zlib's deflate_slow), so the
// largest share alone would pick the generic one by a sample or two:
// Jetty's gzip at level 9 on JDK 25 read 94.10% under the JDK's entry and
// 94.06% under deflate_slow.
func mostSpecific(cpu *evidence.Stacks, codecShare float64) nativeVariant {
	var best nativeVariant
	var bestShare float64
	for _, v := range nativeVariants {
		s := cpu.Share(v.frames)
		if s >= codecShare/2 {
			return v
		}
		if s > bestShare {
			best, bestShare = v, s
		}
	}
	return best
}

// checkNative reports a native codec's share of perf's on-CPU samples. It
// returns whether it reported.
func checkNative(pass *rules.Pass, cpu *evidence.Stacks) bool {
	share := cpu.Share(frames.NativeCompression)
	if share < minShare {
		return false
	}
	best := mostSpecific(cpu, share)
	comm := ""
	if s := pass.Evidence.SystemEnd; s != nil && s.Process != nil {
		comm = s.Process.Comm
	}
	// What the fix gives back, by what it can be: nginx serving files
	// precompressed at deploy (gzip_static) compresses nothing per request,
	// all of the share; where the content is dynamic, a lower level saves
	// at least recoverHigh of it. Which applies is not in the frames.
	rate, basis := recoverOther, "share of on-CPU samples in a native codec; serving precompressed content or a lower level typically saves at least 30% of it"
	impactLow, impactHigh := share*recoverOther, share*recoverHigh
	if best.high {
		rate, basis = recoverHigh, "share of on-CPU samples in a native codec; a lower level saves at least half of it, precompressed static content all of it"
		impactLow, impactHigh = share*recoverHigh, share
	}
	if static := underStaticServing(cpu); comm == "nginx" || static >= minStatic {
		rate, basis = 1, "share of on-CPU samples in a native codec: serving files precompressed once (nginx's gzip_static, a servlet container's precompressed files) removes all of it; "+
			"for dynamic responses a lower level saves at least 60% of it (case C1), the low end of the range"
		impactLow, impactHigh = share*recoverHigh, share
	}
	impact := share * rate
	grade := rules.SeverityFor
	if !best.high && comm != "nginx" {
		// The level is not known: an opportunity, not a proven misconfiguration.
		grade = func(share float64) rules.Severity { return min(rules.SeverityFor(share), rules.Medium) }
	}
	sev := grade(impact)
	library := libraryFile(cpu, best)
	unsym := frames.LeafShare(cpu, frames.Unsymbolized)
	shown := []rules.Fact{
		rules.Share("native compression share of CPU (perf)", share),
		rules.Text("codec and level (from the frames)", best.level),
		rules.Text("library (the mapped file)", library),
	}
	if comm != "" {
		shown = append(shown, rules.Text("process", comm))
	}
	caveats := []string{caveat}
	if unsym > 0.2 {
		caveats = append(caveats, fmt.Sprintf("%s of the samples end in unsymbolized frames: the codec is known from the library file, "+
			"not from its functions, so the level and the caller are not visible. To see them, %s (%s for %s).", human.Percent(unsym), frames.SymbolizeAdvice, best.dbgsym, library))
	}
	f := rules.Finding{
		Severity:    sev,
		Impact:      impact,
		Resource:    "cpu",
		ImpactBasis: basis,
		ImpactRange: &[2]float64{impactLow, impactHigh},
		RemovesWork: rate == 1, // precompressed, the content is compressed no more
		Summary:     fmt.Sprintf("Compression uses %s of CPU in %s (%s)", human.Percent(share), library, best.level),
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
	f.Claim = &rules.Claim{Level: rules.LevelCode, CPU: cpu.Has(frames.NativeCompression), Regrade: grade}
	pass.Report(f)
	return true
}
