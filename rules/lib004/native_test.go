package lib004

import (
	"strings"
	"testing"

	"github.com/perfdoctor/perfdoctor/facts"

	"github.com/google/pprof/profile"

	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/internal/testprof"
	"github.com/perfdoctor/perfdoctor/rules"
)

// The bundles in testdata were recorded with `perfdoctor collect --perf`
// from Debian's nginx 1.22 on loopback serving a 615 KB HTML page to
// `perfdoctor load -H 'Accept-Encoding: gzip' -c 4`: with gzip_comp_level 9
// (nginx-gzip9), and with gzip_static on and the page precompressed once
// (nginx-gzip-static). Debian's libz.so is stripped of its internal
// symbols, so perf sees only "[unknown] libz.so.1.2.13".
func diagnoseBundle(t *testing.T, dir string) rules.Result {
	t.Helper()
	ev, err := evidence.Load(t.Context(), evidence.LoadOptions{}, "testdata/"+dir)
	if err != nil {
		t.Fatal(err)
	}
	return rules.Run(facts.New(ev), []*rules.Rule{Rule})
}

func TestNativeZlibInNginx(t *testing.T) {
	res := diagnoseBundle(t, "nginx-gzip9")
	if len(res.Findings) != 1 {
		t.Fatalf("nginx spending its CPU in libz: %+v", res)
	}
	f := res.Findings[0]
	if f.Severity != rules.High || !strings.Contains(f.Summary, "zlib") || !strings.Contains(f.Fix, "gzip_static on") ||
		!strings.Contains(f.Fix, "gzip_comp_level") {
		t.Errorf("want a high zlib finding with nginx's prescription: %s %q\n%s", f.Severity, f.Summary, f.Fix)
	}
	if len(f.Caveats) < 2 || !strings.Contains(f.Caveats[1], "unsymbolized") {
		t.Errorf("the stripped library is not explained: %q", f.Caveats)
	}
	if res := diagnoseBundle(t, "nginx-gzip-static"); len(res.Findings) != 0 {
		t.Errorf("precompressed content reported: %+v", res.Findings[0])
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
