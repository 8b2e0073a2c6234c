package lib002

import (
	"strings"
	"testing"

	"github.com/perfdoctor/perfdoctor/facts"

	"github.com/google/pprof/profile"

	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/internal/testprof"
	"github.com/perfdoctor/perfdoctor/rules"
)

// Symbol names as in github.com/IBM/sarama v1.61 and github.com/Shopify/sarama
// v1.38 (async_producer.go, broker.go, utils.go), github.com/segmentio/kafka-go
// v0.4 (writer.go, transport.go, protocol/), github.com/twmb/franz-go v1.22
// (pkg/kgo lib002.go, sink.go, broker.go).

var netWrite = []string{"syscall.Syscall", "syscall.write", "internal/poll.ignoringEINTRIO", "internal/poll.(*FD).Write", "net.(*netFD).Write", "net.(*conn).Write"}

func cat(parts ...[]string) []string {
	var out []string
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

func stack(v int64, funcs ...string) testprof.Stack { return testprof.Stack{Value: v, Funcs: funcs} }

// saramaAsync is the async producer of case A1: Flush.Frequency 0, so each
// message becomes a produce request written by the bridge goroutine.
func saramaAsync(pkg string, scale int64) []testprof.Stack {
	s := pkg + "."
	send := []string{s + "(*Broker).sendInternal", s + "(*Broker).sendWithPromise", s + "(*Broker).AsyncProduce", s + "(*asyncProducer).newBrokerProducer.func1", s + "withRecover"}
	return []testprof.Stack{
		stack(6*scale, cat(netWrite, []string{s + "(*Broker).write"}, send)...),
		stack(3*scale, "syscall.Syscall", "syscall.read", "internal/poll.(*FD).Read", "net.(*netFD).Read", "net.(*conn).Read",
			"io.ReadAtLeast", "io.ReadFull", s+"(*Broker).readFull", s+"(*Broker).responseReceiver", s+"withRecover"),
		stack(4*scale, cat([]string{s + "(*realEncoder).putInt32", s + "(*ProduceRequest).encode", s + "(*request).encode", s + "encode"}, send)...),
		stack(3*scale, s+"(*produceSet).buildRequest", s+"(*asyncProducer).newBrokerProducer.func1", s+"withRecover"),
		stack(3*scale, "runtime.chansend1", s+"(*partitionProducer).dispatch", s+"withRecover"),
		stack(2*scale, s+"(*produceSet).add", s+"(*brokerProducer).run", s+"withRecover"),
		stack(1*scale, "runtime.selectgo", s+"(*asyncProducer).dispatcher", s+"withRecover"),
	}
}

func run(cpu *profile.Profile) rules.Result {
	return rules.Run(facts.New(testprof.Evidence(map[evidence.Kind]*profile.Profile{evidence.CPU: cpu})), []*rules.Rule{Rule})
}

func one(t *testing.T, res rules.Result) rules.Finding {
	t.Helper()
	if len(res.Findings) != 1 {
		t.Fatalf("want one unbatched-producer finding, got %d: %+v (not checked %v)", len(res.Findings), res.Findings, res.NotChecked)
	}
	return res.Findings[0]
}

// Case A1: sending at 21.9% of CPU; a 500 ms flush frequency removed it.
func TestFiresOnSaramaAsyncProducerPerMessage(t *testing.T) {
	for _, pkg := range []string{"github.com/IBM/sarama", "github.com/Shopify/sarama"} {
		t.Run(pkg, func(t *testing.T) {
			stacks := append(saramaAsync(pkg, 10), stack(780, "main.(*tracker).handle", "net/http.HandlerFunc.ServeHTTP"))
			f := one(t, run(testprof.Build(stacks...)))
			// The produce path holds 18% of CPU; the engine's estimate of
			// what batching removes (1.3 times it) grades the finding.
			if f.Impact < 0.2 || f.Severity != rules.High {
				t.Errorf("impact %.3f severity %s: want ~23%% high", f.Impact, f.Severity)
			}
			if !strings.Contains(f.Fix, "Flush.Frequency") || !strings.Contains(f.Summary, "sarama") {
				t.Errorf("summary %q fix %q", f.Summary, f.Fix)
			}
		})
	}
}

func TestSaramaSyncProducerNamesTheCaller(t *testing.T) {
	s := "github.com/IBM/sarama."
	cpu := testprof.Build(append(saramaAsync("github.com/IBM/sarama", 10),
		stack(40, "runtime.chanrecv1", s+"(*syncProducer).SendMessage", "main.(*audit).record", "main.handle"),
		stack(740, "main.handle"))...)
	f := one(t, run(cpu))
	if len(f.Locations) == 0 || f.Locations[0].Function != "main.(*audit).record" {
		t.Errorf("locations %+v, want main.(*audit).record", f.Locations)
	}
}

func TestFiresOnKafkaGoWriterWithTinyBatches(t *testing.T) {
	k, p := "github.com/segmentio/kafka-go.", "github.com/segmentio/kafka-go/protocol."
	transport := []string{p + "(*Conn).Write", p + "WriteRequest", p + "RoundTrip", p + "(*Conn).RoundTrip", k + "(*conn).roundTrip", k + "(*conn).run"}
	cpu := testprof.Build(
		stack(60, cat(netWrite, transport)...),
		stack(30, "github.com/segmentio/kafka-go/protocol.(*encoder).writeInt32", p+"WriteRequest", p+"RoundTrip", p+"(*Conn).RoundTrip", k+"(*conn).roundTrip", k+"(*conn).run"),
		stack(30, "runtime.selectgo", k+"(*partitionWriter).writeBatch", k+"(*partitionWriter).writeBatches"),
		stack(20, "runtime.selectgo", k+"(*Writer).WriteMessages", "main.(*pipeline).emit", "main.(*pipeline).run"),
		stack(860, "main.(*pipeline).run"),
	)
	f := one(t, run(cpu))
	if !strings.Contains(f.Fix, "BatchSize") || !strings.Contains(f.Summary, "kafka-go") {
		t.Errorf("summary %q fix %q", f.Summary, f.Fix)
	}
	if len(f.Locations) == 0 || f.Locations[0].Function != "main.(*pipeline).emit" {
		t.Errorf("locations %+v", f.Locations)
	}
}

func TestFiresOnFranzGoProduceSyncPerRecord(t *testing.T) {
	g := "github.com/twmb/franz-go/pkg/kgo."
	cpu := testprof.Build(
		stack(50, cat(netWrite, []string{g + "(*brokerCxn).writeConn", g + "(*brokerCxn).writeRequest", g + "(*broker).handleReq", g + "(*broker).handleReqs"})...),
		stack(30, "github.com/twmb/franz-go/pkg/kmsg.(*ProduceRequest).AppendTo", g+"(*produceRequest).AppendTo", g+"(*brokerCxn).writeRequest", g+"(*broker).handleReq", g+"(*broker).handleReqs"),
		stack(20, g+"(*sink).produce", g+"(*sink).drain"),
		stack(20, "runtime.chanrecv1", g+"(*Client).ProduceSync", "main.(*ingest).store", "main.(*ingest).loop"),
		stack(880, "main.(*ingest).loop"),
	)
	f := one(t, run(cpu))
	if !strings.Contains(f.Fix, "ProducerLinger") || len(f.Locations) == 0 || f.Locations[0].Function != "main.(*ingest).store" {
		t.Errorf("fix %q locations %+v", f.Fix, f.Locations)
	}
}

func TestSilentWhenSaramaBatches(t *testing.T) {
	// Flush.Frequency 500ms: few, large requests; the produce path is 2%.
	cpu := testprof.Build(append(saramaAsync("github.com/IBM/sarama", 1), stack(978, "main.(*tracker).handle"))...)
	if res := run(cpu); len(res.Findings) != 0 {
		t.Fatalf("batched producer reported: %+v", res.Findings[0])
	}
}

func TestSilentOnBusyProducerWithoutWrites(t *testing.T) {
	// 6% in the producer but no write system calls: batching is in place.
	s := "github.com/IBM/sarama."
	cpu := testprof.Build(
		stack(40, "github.com/klauspost/compress/zstd.(*Encoder).EncodeAll", s+"compress", s+"(*produceSet).buildRequest", s+"(*asyncProducer).newBrokerProducer.func1", s+"withRecover"),
		stack(20, s+"(*produceSet).add", s+"(*brokerProducer).run", s+"withRecover"),
		stack(940, "main.work"),
	)
	if res := run(cpu); len(res.Findings) != 0 {
		t.Fatalf("batched producer without writes reported: %+v", res.Findings[0])
	}
}

func TestConsumerTrafficIsNotCountedAsProducing(t *testing.T) {
	// kgo broker connections busy with fetches: the transport belongs to the consumer.
	g := "github.com/twmb/franz-go/pkg/kgo."
	cpu := testprof.Build(
		stack(100, cat(netWrite, []string{g + "(*brokerCxn).writeConn", g + "(*brokerCxn).writeRequest", g + "(*broker).handleReq", g + "(*broker).handleReqs"})...),
		stack(100, g+"(*source).fetch", g+"(*source).loopFetch"),
		stack(10, g+"(*sink).produce", g+"(*sink).drain"),
		stack(790, "main.consume"),
	)
	if res := run(cpu); len(res.Findings) != 0 {
		t.Fatalf("consumer transport reported as producing: %+v", res.Findings[0])
	}
}

func TestBusyProducerWithoutNetworkCallsIsOnlyAdvice(t *testing.T) {
	s := "github.com/IBM/sarama."
	cpu := testprof.Build(
		stack(100, "github.com/klauspost/compress/zstd.(*Encoder).EncodeAll", s+"compress", s+"(*produceSet).buildRequest", s+"(*asyncProducer).newBrokerProducer.func1", s+"withRecover"),
		stack(50, s+"(*produceSet).add", s+"(*brokerProducer).run", s+"withRecover"),
		stack(850, "main.work"),
	)
	f := one(t, run(cpu))
	if f.Severity != rules.Low || f.Impact > rules.Estimated(0.061) || !strings.Contains(f.Summary, "check the batch size") {
		t.Errorf("severity %s impact %.3f summary %q: want low advice", f.Severity, f.Impact, f.Summary)
	}
}

// Casebook A1 fixed (1000 messages a request) under load: the producer at
// 10% of CPU, 8% of it in its large requests' writes and reads. Some I/O is
// not a request per message (unbatched measured 24-30%): low, not medium.
func TestLargeBatchesIOIsNotPerMessage(t *testing.T) {
	s := "github.com/IBM/sarama."
	cpu := testprof.Build(
		stack(8, cat(netWrite, []string{s + "(*Broker).write", s + "(*Broker).sendInternal", s + "(*Broker).AsyncProduce", s + "(*asyncProducer).newBrokerProducer.func1", s + "withRecover"})...),
		stack(60, s+"(*realEncoder).putBytes", s+"(*ProduceRequest).encode", s+"(*produceSet).buildRequest", s+"(*asyncProducer).newBrokerProducer.func1", s+"withRecover"),
		stack(32, s+"(*produceSet).add", s+"(*brokerProducer).run", s+"withRecover"),
		stack(900, "main.(*tracker).handle"),
	)
	f := one(t, run(cpu))
	if f.Severity != rules.Low || strings.Contains(f.Summary, "one request at a time") {
		t.Errorf("%s %q", f.Severity, f.Summary)
	}
}
