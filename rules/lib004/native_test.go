package lib004

import (
	"strings"
	"testing"

	"github.com/perfdoctor/perfdoctor/facts"
	"github.com/perfdoctor/perfdoctor/rules/ruletest"

	"github.com/google/pprof/profile"

	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/internal/testprof"
	"github.com/perfdoctor/perfdoctor/rules"
)

// The bundles in testdata (nginx with gzip_comp_level 9, and with the
// page precompressed) say what they must show in their want.txt; the
// stripped library must be explained.
func TestNativeZlibInNginx(t *testing.T) {
	res := ruletest.Run(t, "testdata", []*rules.Rule{Rule})
	if fs := res["nginx-gzip9"].Findings; len(fs) == 1 && (len(fs[0].Caveats) < 2 || !strings.Contains(fs[0].Caveats[1], "unsymbolized")) {
		t.Errorf("the stripped library is not explained: %q", fs[0].Caveats)
	}
	if fs := res["nginx-gzip9"].Findings; len(fs) == 1 && !fs[0].RemovesWork {
		t.Error("nginx's gzip_static compresses nothing per request: a floor and no top")
	}
}

// With zlib's symbols, deflate_slow (levels 4-9) is a costly level; the
// prescription for a program perfdoctor does not know is zlib's own.
func TestNativeZlibWithSymbols(t *testing.T) {
	cpu := testprof.Build(
		testprof.Stack{Value: 500, Funcs: []string{"longest_match", "deflate_slow", "deflate", "compress_response", "main"}},
		testprof.Stack{Value: 200, Funcs: []string{"deflate_slow", "deflate", "compress_response", "main"}},
		testprof.Stack{Value: 300, Funcs: []string{"parse_request", "main"}},
	)
	res := rules.Run(facts.New(testprof.Evidence(map[evidence.Kind]*profile.Profile{evidence.CPU: cpu})), []*rules.Rule{Rule})
	if len(res.Findings) != 1 {
		t.Fatalf("want a finding: %+v", res)
	}
	f := res.Findings[0]
	if f.Severity != rules.High || !strings.Contains(f.Summary, "70% of CPU") || !strings.Contains(f.Summary, "deflate_slow") ||
		!strings.Contains(f.Summary, "called from compress_response") || !strings.Contains(f.Fix, "deflate_fast") {
		t.Errorf("%s %q\n%s", f.Severity, f.Summary, f.Fix)
	}
	// inflate (decompression) has no level to lower: not this class.
	cpu = testprof.Build(
		testprof.Stack{Value: 700, Funcs: []string{"inflate_fast", "inflate", "read_body", "main"}},
		testprof.Stack{Value: 300, Funcs: []string{"parse_request", "main"}},
	)
	if res := rules.Run(facts.New(testprof.Evidence(map[evidence.Kind]*profile.Profile{evidence.CPU: cpu})), []*rules.Rule{Rule}); len(res.Findings) != 0 {
		t.Errorf("decompression reported: %+v", res.Findings[0])
	}
}

// The specific frames name the level though the generic ones, above them on
// the same stacks, hold a few samples more: Jetty's gzip at level 9 on JDK
// 25, 94.10% under the JDK's Deflater entry and zlib's deflate(), 94.06%
// under deflate_slow.
func TestNativeZlibLevelUnderTheJDKsEntry(t *testing.T) {
	jdk := []string{"Java_java_util_zip_Deflater_deflateBufferBytes", "java.util.zip.Deflater.deflateBufferBytes", "org.eclipse.jetty.server.handler.gzip.GzipResponseAndCallback.commit"}
	cpu := testprof.Build(
		testprof.Stack{Value: 9406, Funcs: append([]string{"longest_match", "deflate_slow", "deflate"}, jdk...)},
		testprof.Stack{Value: 4, Funcs: append([]string{"deflate"}, jdk...)},
		testprof.Stack{Value: 590, Funcs: []string{"org.eclipse.jetty.server.internal.HttpConnection.onFillable"}},
	)
	res := rules.Run(facts.New(testprof.Evidence(map[evidence.Kind]*profile.Profile{evidence.CPU: cpu})), []*rules.Rule{Rule})
	if len(res.Findings) != 1 {
		t.Fatalf("want a finding: %+v", res)
	}
	if f := res.Findings[0]; f.Severity != rules.High || !strings.Contains(f.Summary, "deflate_slow (levels 4-9)") {
		t.Errorf("%s %q", f.Severity, f.Summary)
	}
}
