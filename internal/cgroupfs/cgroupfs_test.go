package cgroupfs

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseCPUMax(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    float64
		wantErr bool
	}{
		{in: "max 100000\n", want: 0},
		{in: "max\n", want: 0},
		{in: "150000 100000\n", want: 1.5},
		{in: "50000 100000", want: 0.5},
		{in: "200000\n", want: 2}, // default period
		{in: "", wantErr: true},
		{in: "1 0", wantErr: true},
		{in: "-1 100000", wantErr: true},
		{in: "abc 100000", wantErr: true},
		{in: "1 2 3", wantErr: true},
	} {
		got, err := ParseCPUMax([]byte(tc.in))
		if (err != nil) != tc.wantErr || got != tc.want {
			t.Errorf("parseCPUMax(%q) = %v, %v; want %v, err %v", tc.in, got, err, tc.want, tc.wantErr)
		}
	}
}

func TestParseValue(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    uint64
		wantErr bool
	}{
		{in: "max\n", want: 0},
		{in: "1073741824\n", want: 1 << 30},
		{in: "9223372036854771712\n", want: 0}, // v1 "unlimited"
		{in: "0\n", want: 0},
		{in: "-1", wantErr: true},
		{in: "", wantErr: true},
	} {
		got, err := ParseValue([]byte(tc.in))
		if (err != nil) != tc.wantErr || got != tc.want {
			t.Errorf("parseCgroupValue(%q) = %v, %v; want %v, err %v", tc.in, got, err, tc.want, tc.wantErr)
		}
	}
}

func TestParseCPUStat(t *testing.T) {
	v2 := "usage_usec 10\nnr_periods 5\nnr_throttled 2\nthrottled_usec 300\nnr_bursts 0\n"
	if got, err := ParseCPUStat([]byte(v2)); err != nil || got != (CPUStat{5, 2, 300}) {
		t.Errorf("v2: %+v, %v", got, err)
	}
	v1 := "nr_periods 5\nnr_throttled 2\nthrottled_time 3000000\n"
	if got, err := ParseCPUStat([]byte(v1)); err != nil || got != (CPUStat{5, 2, 3000}) {
		t.Errorf("v1: %+v, %v", got, err)
	}
	if _, err := ParseCPUStat([]byte("nr_periods x\n")); err == nil {
		t.Error("bad number: no error")
	}
	if got, err := ParseCPUStat(nil); err != nil || got != (CPUStat{}) {
		t.Errorf("empty: %+v, %v", got, err)
	}
}

func TestResolveDir(t *testing.T) {
	mount := t.TempDir()
	if err := os.MkdirAll(filepath.Join(mount, "docker", "abc"), 0o755); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{
		"/docker/abc":                    filepath.Join(mount, "docker", "abc"),
		"/":                              mount,
		"/host.slice/docker/abc":         filepath.Join(mount, "docker", "abc"), // host path seen from a container
		"/gone":                          mount,
		"/../../etc":                     mount, // never escapes the mount
		"/kubepods/besteffort/pod1/ctr1": mount,
	} {
		if got := ResolveDir(mount, path); got != want {
			t.Errorf("ResolveDir(%q) = %q, want %q", path, got, want)
		}
	}
}

func FuzzParseCPUMax(f *testing.F) {
	for _, s := range []string{"max 100000\n", "150000 100000\n", "0 1", "18446744073709551615 1", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		v, err := ParseCPUMax([]byte(in))
		if err != nil {
			return
		}
		if v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
			t.Fatalf("parseCPUMax(%q) = %v", in, v)
		}
	})
}

func FuzzParseCPUStat(f *testing.F) {
	f.Add("nr_periods 5\nnr_throttled 2\nthrottled_usec 300\n")
	f.Add("nr_periods 5\nthrottled_time 3000000\n")
	f.Fuzz(func(t *testing.T, in string) {
		st, err := ParseCPUStat([]byte(in))
		if err == nil && !strings.Contains(in, "throttled") && st.ThrottledUsec != 0 {
			t.Fatalf("throttled time from nowhere: %q -> %+v", in, st)
		}
	})
}

func FuzzParseValue(f *testing.F) {
	for _, s := range []string{"max\n", "1073741824\n", "9223372036854771712\n", "-1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		v, err := ParseValue([]byte(in))
		if err == nil && v >= v1Unlimited {
			t.Fatalf("parseCgroupValue(%q) = %d, an unlimited value passed as a limit", in, v)
		}
	})
}
