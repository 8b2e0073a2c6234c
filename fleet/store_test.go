package fleet

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"

	"github.com/perfdoctor/perfdoctor/collect/store"
)

// syntheticStore is a store of services x instances, each instance's
// profiles the real ones of a corpus bundle (a Prometheus under GOGC=20),
// decoded afresh on every read as a real store's answer would be. Every
// tenth service's CPU is scaled up, so the ranking has something to rank.
type syntheticStore struct {
	services, instances int
	raw                 map[store.Kind][]byte
}

func newSyntheticStore(tb testing.TB, services, instances int) *syntheticStore {
	tb.Helper()
	s := &syntheticStore{services: services, instances: instances, raw: map[store.Kind][]byte{}}
	for _, k := range store.Kinds {
		data, err := os.ReadFile(filepath.Join("../corpus/go-prometheus-gogc-20/bad", string(k)+".pb.gz"))
		if err != nil {
			tb.Fatal(err)
		}
		s.raw[k] = data
	}
	return s
}

func (s *syntheticStore) Describe() string { return "synthetic" }

func (s *syntheticStore) Series(_ context.Context, _ store.Range, service string) ([]store.Series, error) {
	var out []store.Series
	for i := range s.services {
		name := fmt.Sprintf("svc-%04d", i)
		if service != "" && name != service {
			continue
		}
		for j := range s.instances {
			out = append(out, store.Series{Service: name, Instance: fmt.Sprintf("%s-%02d", name, j)})
		}
	}
	return out, nil
}

func (s *syntheticStore) Profiles(_ context.Context, r store.Range, sr store.Series) (map[store.Kind]*profile.Profile, error) {
	out := map[store.Kind]*profile.Profile{}
	hot := strings.HasSuffix(sr.Service, "0")
	for k, data := range s.raw {
		p, err := profile.ParseData(data)
		if err != nil {
			return nil, err
		}
		if k == store.CPU && hot {
			for _, smp := range p.Sample {
				for i := range smp.Value {
					smp.Value[i] *= 4
				}
			}
		}
		out[k] = p
	}
	return out, nil
}

// TestDiagnoseStore: every service and instance of a store is read and
// diagnosed; the hotter services rank first; each instance's cores come
// from its CPU profile over its own duration.
func TestDiagnoseStore(t *testing.T) {
	st := newSyntheticStore(t, 12, 3)
	cpu, _ := profile.ParseData(st.raw[store.CPU])
	r := store.Range{From: time.Unix(0, cpu.TimeNanos), To: time.Unix(0, cpu.TimeNanos+cpu.DurationNanos)}
	rep, err := DiagnoseStore(context.Background(), StoreOptions{Reader: st, Range: r, OutDir: t.TempDir(), Concurrency: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Services) != 12 || rep.Collected() != 36 || rep.Partial {
		t.Fatalf("services %d, instances read %d, partial %v", len(rep.Services), rep.Collected(), rep.Partial)
	}
	if top := rep.Savings[0].Service; !strings.HasSuffix(top, "0") {
		t.Errorf("a service with 4x the CPU ranks first, got %s", top)
	}
	hot, cold := rep.Services[0], rep.Services[1] // svc-0000 is hot, svc-0001 not
	if hot.Cores < 3.5*cold.Cores || cold.Cores <= 0 || hot.CPUSource != CPUFromProfile {
		t.Errorf("cores: hot %.3f cold %.3f (%s), want 4x", hot.Cores, cold.Cores, hot.CPUSource)
	}
	if hot.MergedCPU == "" || hot.ReportJSON == "" || hot.Representative == "" {
		t.Errorf("the service's merged profile and reports: %+v", hot)
	}
}

// BenchmarkFleetStore measures a fleet diagnosis over a store of growing
// size, 10 instances a service: every instance read and diagnosed alone,
// every service merged and diagnosed, reports written. It reports the peak
// heap in use and the process' peak resident memory:
// go test -run XXX -bench FleetStore -benchtime 1x ./fleet/
func BenchmarkFleetStore(b *testing.B) {
	for _, n := range []int{10, 100, 1000} {
		b.Run(fmt.Sprintf("services=%d", n), func(b *testing.B) {
			st := newSyntheticStore(b, n, 10)
			cpu, _ := profile.ParseData(st.raw[store.CPU])
			r := store.Range{From: time.Unix(0, cpu.TimeNanos), To: time.Unix(0, cpu.TimeNanos+cpu.DurationNanos)}
			for b.Loop() {
				dir := b.TempDir()
				peak := watchHeap()
				rep, err := DiagnoseStore(context.Background(), StoreOptions{Reader: st, Range: r, OutDir: dir})
				if err != nil {
					b.Fatal(err)
				}
				var buf bytes.Buffer
				json.NewEncoder(&buf).Encode(rep)
				b.ReportMetric(float64(rep.Collected()), "instances")
				b.ReportMetric(float64(peak()>>20), "peak-heap-MiB")
				b.ReportMetric(float64(peakRSS()>>20), "peak-rss-MiB")
				b.ReportMetric(float64(buf.Len())/1024, "report-KiB")
				// What the run keeps, the report included: the rest is
				// garbage the collector had not yet reclaimed at the peak.
				runtime.GC()
				var ms runtime.MemStats
				runtime.ReadMemStats(&ms)
				b.ReportMetric(float64(ms.HeapAlloc>>20), "live-after-MiB")
				runtime.KeepAlive(rep)
				os.RemoveAll(dir)
			}
		})
	}
}

// peakRSS is the process' peak resident set (VmHWM), 0 if unknown.
func peakRSS() uint64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			var kb uint64
			fmt.Sscanf(strings.TrimSpace(v), "%d", &kb)
			return kb << 10
		}
	}
	return 0
}
