package casebook

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"
)

// Frame families (prefixes) for the library cases A1, A2, C1, C3, C4 and D3.
// A sample counts for a family when, for every group in it, one of its frames
// starts with one of the group's prefixes.
var (
	saramaProducer = [][]string{{
		"github.com/IBM/sarama.(*asyncProducer)", "github.com/IBM/sarama.(*syncProducer)",
		"github.com/IBM/sarama.(*topicProducer)", "github.com/IBM/sarama.(*partitionProducer)",
		"github.com/IBM/sarama.(*brokerProducer)", "github.com/IBM/sarama.(*produceSet)",
		"github.com/IBM/sarama.newProduceSet", "github.com/IBM/sarama.(*Broker).Produce",
		"github.com/IBM/sarama.(*Broker).AsyncProduce", "github.com/IBM/sarama.(*ProduceRequest)",
		"github.com/IBM/sarama.(*ProducerMessage)", "github.com/IBM/sarama.(*Broker).responseReceiver",
	}}
	summaryFamily = [][]string{{
		"github.com/prometheus/client_golang/prometheus.(*summary).", "github.com/beorn7/perks/quantile.",
	}}
	flateFamily = [][]string{{"compress/flate.", "compress/zlib.", "hash/adler32."}}
	// thriftFieldWrites are write system calls made from inside the
	// serializer (a field at a time); thriftWrites are all of the Thrift
	// client's writes, including a buffered transport's one Flush.
	thriftFieldWrites = [][]string{{"internal/poll.(*FD).Write", "syscall.write"}, {"github.com/apache/thrift/lib/go/thrift.(*TBinaryProtocol).Write"}}
	thriftWrites      = [][]string{{"internal/poll.(*FD).Write", "syscall.write"}, {"github.com/apache/thrift/"}}
	formattingFamily  = [][]string{{"fmt.", "runtime.concatstring"}}
	loggingFamily     = [][]string{{"log/slog.", "log."}}
	libGCFamily       = [][]string{{
		"runtime.gcBgMarkWorker", "runtime.gcAssistAlloc", "runtime.gcDrain", "runtime.bgsweep",
		"runtime.sweepone", "runtime.(*sweepLocked).sweep", "runtime.markroot", "runtime.scanobject",
		"runtime.scanObject", "runtime.scanSpan", "runtime.tryDeferToSpanScan",
	}}
	libSchedFamily = [][]string{{
		"runtime.schedule", "runtime.findRunnable", "runtime.stealWork", "runtime.runqgrab",
		"runtime.wakep", "runtime.startm", "runtime.stopm",
	}}
)

// TestCPUSharesLib is TestCPUShares for the library cases. Opt-in:
//
//	PERFDOCTOR_CASEBOOK_PROFILE=1 go test -count=1 -run CPUSharesLib -v ./casebook/
//
// Select cases with -run 'CPUSharesLib/c1'. Each variant gets 8 s of load at
// benchConcurrency; the 5 s profile covers 1.5 s .. 6.5 s of it. Set
// PERFDOCTOR_CASEBOOK_PROFILE_DIR to keep the profiles.
func TestCPUSharesLib(t *testing.T) {
	if os.Getenv("PERFDOCTOR_CASEBOOK_PROFILE") == "" {
		t.Skip("set PERFDOCTOR_CASEBOOK_PROFILE=1 to run (8 s of load per variant)")
	}
	for _, tc := range []struct {
		caseName, variant string
		family            [][]string
		min, max          float64 // bounds on the share, percent
	}{
		{"a1", "bad", saramaProducer, 25, 100},
		{"a1", "fixed", saramaProducer, 0, 10},
		{"a2", "bad", summaryFamily, 25, 100},
		{"a2", "fixed", summaryFamily, 0, 3},
		{"c1", "bad", flateFamily, 25, 100},
		{"c1", "fixed", flateFamily, 0, 100}, // still compresses: see the README
		{"c3", "bad", thriftFieldWrites, 25, 100},
		{"c3", "fixed", thriftFieldWrites, 0, 3},
		{"c4", "bad", formattingFamily, 25, 100},
		{"c4", "fixed", formattingFamily, 0, 3},
		{"d3", "bad", loggingFamily, 25, 100},
		{"d3", "fixed", loggingFamily, 0, 3},
	} {
		t.Run(tc.caseName+"/"+tc.variant, func(t *testing.T) {
			prof := profileUnderLoad(t, tc.caseName, tc.variant, benchConcurrency, 0, time.Second, nil)
			share := familyShare(prof, tc.family)
			t.Logf("%s/%s: share %.1f%% (want %.0f..%.0f%%) of %s CPU; GC %.1f%%, scheduler %.1f%%",
				tc.caseName, tc.variant, share, tc.min, tc.max, cpuTime(prof),
				familyShare(prof, libGCFamily), familyShare(prof, libSchedFamily))
			if tc.caseName == "c3" {
				t.Logf("c3/%s: all Thrift write syscalls %.1f%%", tc.variant, familyShare(prof, thriftWrites))
			}
			if share < tc.min || share > tc.max {
				t.Errorf("share %.1f%% outside %.0f..%.0f%%", share, tc.min, tc.max)
			}
		})
	}
}

// familyShare is the percentage of CPU time in samples that have, for each
// group of the family, a frame starting with one of the group's prefixes.
func familyShare(p *profile.Profile, family [][]string) float64 {
	idx := len(p.SampleType) - 1 // cpu nanoseconds
	var hit, total int64
	for _, s := range p.Sample {
		v := s.Value[idx]
		total += v
		all := true
		for _, group := range family {
			if !stackHas(s, group) {
				all = false
				break
			}
		}
		if all {
			hit += v
		}
	}
	if total == 0 {
		return 0
	}
	return 100 * float64(hit) / float64(total)
}

func stackHas(s *profile.Sample, prefixes []string) bool {
	for _, loc := range s.Location {
		for _, ln := range loc.Line {
			if ln.Function == nil {
				continue
			}
			for _, pre := range prefixes {
				if strings.HasPrefix(ln.Function.Name, pre) {
					return true
				}
			}
		}
	}
	return false
}
