package evidence

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

func TestLoadResultsAreParsedWithTheEvidence(t *testing.T) {
	dir := t.TempDir()
	writeProfile(t, dir, "h", "heap", 0)
	// load.json as perfdoctor load writes it (bundle.LoadResult).
	doc := `{"url":"http://127.0.0.1:8080/","mode":"open","concurrency":4,"rate":200,"duration_ms":2000,
	"requests":400,"errors":2,"errors_by_kind":{"timeout":2},"throughput_rps":199,
	"latency":{"p50_ms":1.5,"p99_ms":9},"service":{"p99_ms":4},"late_sends":1,"dropped_sends":0,"unfinished":0,
	"timeline":[{"t":0,"ok":199,"errors":1,"p50_ms":1.5,"p99_ms":9,"max_ms":12}],"generator_cpu":0.1,"load_average":0.5}`
	if err := os.WriteFile(filepath.Join(dir, "results.json"), []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	ev, err := Load(context.Background(), LoadOptions{}, dir)
	if err != nil {
		t.Fatal(err)
	}
	l := ev.Load
	if l == nil {
		t.Fatal("no load results")
	}
	if l.Mode != "open" || l.Requests != 400 || l.Latency.P99 != 9 || l.Service.P99 != 4 || len(l.Timeline) != 1 || l.ErrorsByKind["timeout"] != 2 {
		t.Errorf("load results = %+v", l)
	}
}
