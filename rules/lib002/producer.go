// Package lib002 detects Kafka producers that send message by message
// instead of in batches (finding class unbatched-producer).
package lib002

import (
	"fmt"

	"github.com/perfdoctor/perfdoctor/facts"

	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/internal/human"
	"github.com/perfdoctor/perfdoctor/rules"
)

// Rule is LIB002.
var Rule = &rules.Rule{
	ID:    "LIB002",
	Class: "unbatched-producer",
	Doc: rules.Doc{
		Title: "A Kafka producer sends message by message",
		Text: `A producer that flushes as soon as a message arrives turns every message into
its own produce request: an encoding pass, a write system call, a response to
read and parse, metrics to update, and several goroutine hand-offs. At high
message rates this dominates the CPU of a service whose real work is small;
batching amortises all of it over many messages.`,
		Evidence: `CPU share of samples in a Kafka client's produce path: sarama
(github.com/IBM/sarama and the older github.com/Shopify/sarama: the
asyncProducer, syncProducer, topicProducer, partitionProducer and
brokerProducer goroutines started through withRecover, produceSet,
(*Broker).Produce/AsyncProduce), segmentio/kafka-go ((*Writer).WriteMessages,
partitionWriter.writeBatch, writeBatch, Client.Produce) and twmb/franz-go kgo
((*Client).ProduceSync/Produce/TryProduce, sink, recBuf). The client's
connection code shared with consumers (sarama's responseReceiver, kafka-go's
transport, kgo's broker connections) counts only when the profile shows no
consumer in the same library. The network system calls under the produce path,
request writes (internal/poll.(*FD).Write, syscall.write) and response reads,
one pair per request, are the evidence of per-message sends: from 15% of the
producer's samples (casebook A1 unbatched: 24-30%; batched with 1000 messages
a request: 0-8%, its large requests' writes and reads included). Reports
from 3% of CPU with that evidence; from 3% with some (5-15%) and from 10%
with none, with a lower estimate and at most low severity.`,
		Fix: `Batch. sarama: Producer.Flush.Frequency (e.g. 100-500ms) and/or
Flush.Messages / Flush.Bytes, and SendMessages for slices with the
SyncProducer. kafka-go: Writer.BatchSize / BatchBytes / BatchTimeout, Async:
true, and WriteMessages with many messages per call. franz-go: ProducerLinger
and asynchronous Produce with a promise instead of ProduceSync per record.`,
		Before: `cfg.Producer.Flush.Frequency = 0 // sarama: a produce request per message`,
		After: `cfg.Producer.Flush.Frequency = 500 * time.Millisecond
cfg.Producer.Flush.Messages = 1000`,
		Caveats: caveat,
		Since:   "0.1",
		Refs: []string{
			"https://pkg.go.dev/github.com/IBM/sarama#Config",
			"https://pkg.go.dev/github.com/segmentio/kafka-go#Writer",
			"https://pkg.go.dev/github.com/twmb/franz-go/pkg/kgo#ProducerLinger",
		},
	},
	Needs: []rules.Input{rules.CPU},
	Facts: []facts.Key{facts.CPUStacks},
	Check: check,
}

const caveat = "Batching adds up to the flush interval to each message's delivery latency, and more messages are in flight (lost on a crash unless acknowledged)."

// client is one Kafka library's produce path.
type client struct {
	name      string
	producer  evidence.Matcher // the produce path
	transport evidence.Matcher // connection code shared with consumers
	consumer  evidence.Matcher
	own       evidence.Matcher // the whole library: never named as the caller
	fix       string
	example   string
}

func sarama(paths ...string) client {
	var prod, conn, cons, own []string
	for _, p := range paths {
		s := p + "."
		prod = append(prod, s+"(*asyncProducer)", s+"(*syncProducer)", s+"(*topicProducer)",
			s+"(*partitionProducer)", s+"(*brokerProducer)", s+"(*produceSet)", s+"newProduceSet",
			s+"(*Broker).Produce", s+"(*Broker).AsyncProduce", s+"(*ProduceRequest)", s+"(*ProducerMessage)",
			s+"(*transactionManager)")
		conn = append(conn, s+"(*Broker).responseReceiver")
		cons = append(cons, s+"(*consumer", s+"(*partitionConsumer)", s+"(*brokerConsumer)", s+"(*offsetManager)")
		own = append(own, p+".", p+"/")
	}
	return client{
		name:      "sarama",
		producer:  evidence.FuncPrefix(prod...),
		transport: evidence.FuncPrefix(conn...),
		consumer:  evidence.FuncPrefix(cons...),
		own:       evidence.FuncPrefix(append(own, "github.com/rcrowley/go-metrics.")...),
		fix: "Batch in sarama: set config.Producer.Flush.Frequency (e.g. 100-500ms; 500ms removed the producer from the top in case A1) " +
			"and/or Flush.Messages and Flush.Bytes so a produce request carries many messages; with the SyncProducer, send slices " +
			"with SendMessages or move to the AsyncProducer.",
		example: "cfg.Producer.Flush.Frequency = 500 * time.Millisecond\ncfg.Producer.Flush.Messages = 1000",
	}
}

var clients = []client{
	sarama("github.com/IBM/sarama", "github.com/Shopify/sarama"),
	func() client {
		k := "github.com/segmentio/kafka-go."
		proto := "github.com/segmentio/kafka-go/protocol."
		return client{
			name: "kafka-go",
			producer: evidence.FuncPrefix(k+"(*Writer).", k+"(*partitionWriter).", k+"(*writeBatch).", k+"(*writerRecords).",
				k+"(*Conn).WriteMessages", k+"(*Conn).WriteCompressedMessages", k+"(*Conn).writeCompressedMessages",
				k+"(*Client).Produce"),
			transport: evidence.FuncPrefix(k+"(*conn).", k+"(*connPool).", k+"(*Transport).", proto+"(*Conn).", proto+"RoundTrip", proto+"WriteRequest"),
			consumer:  evidence.FuncPrefix(k+"(*Reader).", k+"(*reader).", k+"(*Batch).", k+"(*Conn).ReadBatch", k+"(*Conn).ReadMessage", k+"(*Client).Fetch"),
			own:       evidence.FuncPrefix("github.com/segmentio/kafka-go"),
			fix: "Batch in kafka-go: call Writer.WriteMessages with many messages at once, or set Async: true so calls return at once " +
				"and batches fill; size them with Writer.BatchSize (default 100), BatchBytes and BatchTimeout (default 1s). " +
				"BatchSize: 1 sends a request per message.",
			example: "w := &kafka.Writer{Addr: kafka.TCP(brokers...), Topic: topic, BatchSize: 1000, BatchTimeout: 50 * time.Millisecond, Async: true}",
		}
	}(),
	func() client {
		g := "github.com/twmb/franz-go/pkg/kgo."
		return client{
			name: "franz-go",
			producer: evidence.FuncPrefix(g+"(*Client).ProduceSync", g+"(*Client).Produce", g+"(*Client).TryProduce", g+"(*Client).produce",
				g+"(*sink).", g+"(*recBuf).", g+"(*recBatch).", g+"(*produceRequest).", g+"(*producer)."),
			transport: evidence.FuncPrefix(g+"(*broker).", g+"(*brokerCxn)."),
			consumer:  evidence.FuncPrefix(g+"(*source).", g+"(*consumer).", g+"(*groupConsumer).", g+"(*Client).PollFetches", g+"(*Client).PollRecords"),
			own:       evidence.FuncPrefix("github.com/twmb/franz-go/"),
			fix: "Batch in franz-go: produce asynchronously with Client.Produce(ctx, rec, promise) instead of ProduceSync per record " +
				"(or ProduceSync with many records per call), and let batches fill with kgo.ProducerLinger (e.g. 5-50ms) and " +
				"kgo.ProducerBatchMaxBytes.",
			example: "cl, _ := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ProducerLinger(20*time.Millisecond))\ncl.Produce(ctx, rec, onDone) // not ProduceSync per record",
		}
	}(),
}

var (
	// writeFrames are write system calls: one per produce request.
	writeFrames = evidence.FuncPrefix(
		"internal/poll.(*FD).Write", "syscall.write", "syscall.Write", "golang.org/x/sys/unix.write",
	)
	// ioFrames add the reads of the responses: one per request too.
	ioFrames = evidence.Any(writeFrames, evidence.FuncPrefix(
		"internal/poll.(*FD).Read", "syscall.read", "syscall.Read", "golang.org/x/sys/unix.read",
	))
)

const (
	minShare      = 0.03 // with write evidence
	minShareBlind = 0.10 // without it
	minIOFrac     = 0.05 // of the producer's samples: some network I/O
	// perMessageIOFrac is where the I/O says a request per message: casebook
	// A1 measured 24-30% unbatched and 0-8% batched (1000 messages a
	// request; 8% read as medium at 5% in a CI run).
	perMessageIOFrac = 0.15
	// recoverable: batching turns a request per message into one per batch;
	// the per-message encoding and hand-offs remain.
	recoverable      = 0.8
	recoverableBlind = 0.4
)

func check(pass *rules.Pass) error {
	if !pass.EnoughCPU() {
		return nil
	}
	cpu := facts.Get(pass.Facts, facts.CPUStacks)
	writes, netIO := cpu.Has(writeFrames), cpu.Has(ioFrames)
	for _, c := range clients {
		inProducer, inTransport := cpu.Has(c.producer), cpu.Has(c.transport)
		consumers := cpu.Share(c.consumer) > 0
		produce := func(s evidence.Sample) bool {
			return inProducer(s) || (!consumers && inTransport(s))
		}
		share := cpu.ShareWhere(produce)
		if share < minShare {
			continue
		}
		writeShare := cpu.ShareWhere(func(s evidence.Sample) bool { return produce(s) && writes(s) })
		ioShare := cpu.ShareWhere(func(s evidence.Sample) bool { return produce(s) && netIO(s) })
		ioFrac := ioShare / share
		perMessage := ioFrac >= perMessageIOFrac
		if ioFrac < minIOFrac && share < minShareBlind {
			continue
		}
		app := func(fn string) bool { return rules.IsApplication(fn) && !c.own(fn) }
		callers := cpu.TopSites(5, cpu.CallerOf(c.producer, app))

		impact, basis := share*recoverable, "share of CPU in the "+c.name+" produce path; batching sends one request per batch instead of one per message, leaving the per-message encoding: about 80% of it"
		if !perMessage {
			impact, basis = share*recoverableBlind, "share of CPU in the "+c.name+" produce path; few network system calls under it, so batches may already be large: estimated at 40% of it"
		}
		sev := rules.SeverityFor(impact)
		if !perMessage {
			sev = min(sev, rules.Low) // no evidence of per-message sends: advice, not alarm
		}
		f := rules.Finding{
			Severity:    sev,
			Impact:      impact,
			Resource:    "cpu",
			ImpactBasis: basis,
			Summary:     fmt.Sprintf("The %s producer uses %s of CPU", c.name, human.Percent(share)),
			Evidence: []rules.Fact{
				rules.Share("produce path share of CPU", share),
				rules.Share("write system calls under the producer (share of CPU)", writeShare),
				rules.Share("request writes and response reads (share of the producer's samples)", ioFrac),
				rules.Text("client library", c.name),
			},
			Fix:       c.fix,
			Example:   c.example,
			Caveats:   []string{caveat},
			Locations: rules.Locations(callers, "code producing messages"),
		}
		if consumers {
			f.Frames = cpu.Matched(c.producer, 12)
		} else {
			f.Frames = cpu.Matched(evidence.Any(c.producer, c.transport), 12)
		}
		if perMessage {
			f.Summary += fmt.Sprintf(", %s of it writing requests and reading responses: messages are sent one request at a time", human.Percent(ioFrac))
		} else {
			f.Summary += fmt.Sprintf("; %s of it in network system calls, fewer than a request per message takes, so check the batch size before changing the flush settings", human.Percent(ioFrac))
			f.Caveats = append(f.Caveats, "Request writes and response reads are under 15% of the producer's samples (an unbatched sarama producer measured 24-30%): batches may already be large and the cost may be encoding, compression or goroutine hand-offs. Check the client's batch-size metrics first.")
		}
		if len(callers) > 0 {
			f.Summary += " (from " + rules.ShortFunc(callers[0].Func) + ")"
		}
		f.Claim = &rules.Claim{Level: rules.LevelCode, CPU: produce}
		if perMessage {
			f.Claim.Regrade = rules.SeverityFor
		}
		pass.Report(f)
	}
	return nil
}
