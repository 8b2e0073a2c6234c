package verify

import (
	"strings"
	"testing"
	"time"

	"github.com/perfdoctor/perfdoctor/load"
)

// rounds builds complete rounds from per-round throughput and p99 pairs.
func rounds(pairs ...[4]float64) []Round {
	var out []Round
	for i, p := range pairs {
		res := func(tput, p99ms float64) *load.Result {
			d := time.Duration(p99ms * float64(time.Millisecond))
			return &load.Result{Throughput: tput, Latency: load.Percentiles{P50: d / 2, P99: d}}
		}
		out = append(out, Round{Round: i + 1, Before: res(p[0], p[1]), After: res(p[2], p[3])})
	}
	return out
}

func TestJudge(t *testing.T) {
	for name, c := range map[string]struct {
		rounds    []Round
		minChange float64
		want      string
		why       string
	}{
		"after is slower": {rounds([4]float64{1000, 5, 700, 9}, [4]float64{1010, 5.1, 690, 9.2}, [4]float64{990, 4.9, 710, 8.8}), 0, Slower, "throughput"},
		"after is faster": {rounds([4]float64{700, 9, 1000, 5}, [4]float64{690, 9.2, 1010, 5.1}, [4]float64{710, 8.8, 990, 4.9}), 0, Faster, ""},
		"noise only":      {rounds([4]float64{1000, 5, 1010, 5}, [4]float64{1000, 5, 990, 5}, [4]float64{1000, 5, 1000, 5}), 0, Same, ""},
		"one round":       {rounds([4]float64{1000, 5, 500, 10}), 0, Same, "fewer than two"},
		"below min-change": {rounds([4]float64{1000, 5, 980, 5.1}, [4]float64{1000, 5, 981, 5.1}, [4]float64{1000, 5, 979, 5.1}),
			0.05, Same, ""},
	} {
		v := &Result{Rounds: c.rounds}
		v.judge(c.minChange)
		if v.Verdict != c.want || !strings.Contains(v.Why, c.why) {
			t.Errorf("%s: verdict %q (%s), want %q", name, v.Verdict, v.Why, c.want)
		}
		if len(c.rounds) >= 2 && len(v.Ratios) != 3 {
			t.Errorf("%s: %d ratios, want throughput, p50 and p99 (no CPU figures)", name, len(v.Ratios))
		}
	}
}

func TestLocalPID(t *testing.T) {
	for _, u := range []string{"udp://127.0.0.1:9000", "http://192.0.2.1:80/", "not a url", "http://127.0.0.1:1/"} {
		if pid := LocalPID(u); pid != 0 {
			t.Errorf("LocalPID(%q) = %d, want 0", u, pid)
		}
	}
}
