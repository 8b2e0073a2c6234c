package pyroscope_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"

	"github.com/perfdoctor/perfdoctor/collect/pyroscope"
	"github.com/perfdoctor/perfdoctor/collect/store"
	"github.com/perfdoctor/perfdoctor/internal/pyroscopetest"
)

// The server here is internal/pyroscopetest: a stand-in written from
// Pyroscope's documented API, not a real Pyroscope (see its doc).

func goProfile(types ...string) *profile.Profile {
	fn := &profile.Function{ID: 1, Name: "main.work"}
	unlock := &profile.Function{ID: 2, Name: "sync.(*Mutex).Unlock"}
	l1 := &profile.Location{ID: 1, Line: []profile.Line{{Function: fn}}}
	l2 := &profile.Location{ID: 2, Line: []profile.Line{{Function: unlock}}}
	p := &profile.Profile{Function: []*profile.Function{fn, unlock}, Location: []*profile.Location{l1, l2}, Period: 1}
	for _, t := range types {
		p.SampleType = append(p.SampleType, &profile.ValueType{Type: t, Unit: "count"})
	}
	v := make([]int64, len(types))
	for i := range v {
		v[i] = int64(10 * (i + 1))
	}
	p.Sample = []*profile.Sample{{Location: []*profile.Location{l2, l1}, Value: v}}
	return p
}

func TestReadStandIn(t *testing.T) {
	srv := &pyroscopetest.Server{}
	hs := httptest.NewServer(srv.Handler())
	defer hs.Close()
	now := time.Now()
	for _, inst := range []string{"a", "b"} {
		labels := map[string]string{"service_name": "api", "instance": inst}
		srv.Add(labels, now.Add(-time.Minute), now, goProfile("samples", "cpu"), nil)
		srv.Add(labels, now.Add(-time.Minute), now, goProfile("alloc_objects", "alloc_space", "inuse_objects", "inuse_space"), nil)
		srv.Add(labels, now.Add(-time.Minute), now, goProfile("contentions", "delay"), map[string]string{"contentions": "mutex_count", "delay": "mutex_duration"})
	}
	srv.Add(map[string]string{"service_name": "old"}, now.Add(-3*time.Hour), now.Add(-2*time.Hour), goProfile("cpu"), nil)

	c, err := pyroscope.New(hs.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := store.Range{From: now.Add(-10 * time.Minute), To: now.Add(time.Second)}
	series, err := c.Series(context.Background(), r, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(series) != 2 || series[0] != (store.Series{Service: "api", Instance: "a"}) || series[1].Instance != "b" {
		t.Fatalf("series in range: %+v (the old service is out of it)", series)
	}
	ps, err := c.Profiles(context.Background(), r, store.Series{Service: "api"})
	if err != nil {
		t.Fatal(err)
	}
	cpu, allocs, mutex := ps[store.CPU], ps[store.Allocs], ps[store.Mutex]
	if cpu == nil || allocs == nil || mutex == nil || ps[store.Block] != nil {
		t.Fatalf("kinds: %v", ps)
	}
	// Both instances merged: cpu 20 + 20; allocs' two types combined.
	if len(cpu.SampleType) != 1 || cpu.Sample[0].Value[0] != 40 || cpu.DurationNanos != r.Duration().Nanoseconds() {
		t.Errorf("cpu: types %v values %v duration %d", cpu.SampleType, cpu.Sample[0].Value, cpu.DurationNanos)
	}
	if len(allocs.SampleType) != 2 || allocs.DefaultSampleType != "alloc_space" || allocs.SampleType[0].Type != "alloc_space" {
		t.Errorf("allocs: %v default %q", allocs.SampleType, allocs.DefaultSampleType)
	}
	var space, objects int64
	for _, s := range allocs.Sample {
		space, objects = space+s.Value[0], objects+s.Value[1]
	}
	if space != 40 || objects != 20 {
		t.Errorf("allocs merged: space %d objects %d, want 40 and 20", space, objects)
	}
	if len(mutex.SampleType) != 2 || mutex.SampleType[0].Type != "delay" {
		t.Errorf("mutex: %v", mutex.SampleType)
	}
	if _, err := c.Profiles(context.Background(), r, store.Series{Service: "nope"}); err == nil || !strings.Contains(err.Error(), "no profiles") {
		t.Errorf("a service the server does not hold: %v", err)
	}
}

// TestServerErrors: what a server answers wrong comes back as one line
// naming the server (credentials redacted) and the call.
func TestServerErrors(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/querier.v1.QuerierService/Series", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusBadRequest)
		w.Write([]byte(`{"code":"invalid_argument","message":"parse error:\nbad selector"}`))
	})
	mux.HandleFunc("/querier.v1.QuerierService/ProfileTypes", func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`<html>not json</html>`))
	})
	hs := httptest.NewServer(mux)
	defer hs.Close()
	u := strings.Replace(hs.URL, "http://", "http://user:secret@", 1)
	c, err := pyroscope.New(u, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := store.Range{From: time.Now().Add(-time.Hour), To: time.Now()}
	_, err1 := c.Series(context.Background(), r, "")
	_, err2 := c.Profiles(context.Background(), r, store.Series{Service: "x"})
	for _, err := range []error{err1, err2} {
		if err == nil {
			t.Fatal("no error")
		}
		msg := err.Error()
		if strings.Contains(msg, "\n") || strings.Contains(msg, "secret") || !strings.Contains(msg, "pyroscope http://") {
			t.Errorf("error %q: want one line naming the server, password redacted", msg)
		}
	}
	if !strings.Contains(err1.Error(), "invalid_argument: parse error") {
		t.Errorf("the Connect error's code and message: %v", err1)
	}
	if _, err := pyroscope.New("localhost:4040", nil); err == nil {
		t.Error("a URL without scheme is refused")
	}
}
