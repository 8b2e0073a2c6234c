// Package a1producer reproduces casebook case A1, unbatched-producer: an ad
// exchange whose sarama Kafka producer sent three log streams message by
// message, at 21.9% of CPU. The fix was Producer.Flush.Frequency = 500ms.
//
// Each request does some bidding work and then sends three log messages
// (access, bid and win streams, one topic each) through one shared sarama
// AsyncProducer. The Kafka broker is sarama's own MockBroker, started by the
// handler on 127.0.0.1:0 and answering metadata and produce requests.
//
//   - Bad: Producer.Flush.MaxMessages = 1 and no flush frequency: every
//     message is its own produce request (encode, write syscall, response
//     read and decode, several goroutine hand-offs).
//   - Fixed: Producer.Flush.Frequency = 500ms and Flush.Messages = 1000: a
//     produce request carries up to a thousand messages.
//
// The mock broker runs in this process, so its side of each request (read,
// decode, answer) is in the service's profile too, under
// sarama.(*MockBroker).handleRequests; a real broker's would not be.
//
// This is "any Go service": it imports nothing from perfdoctor.
package a1producer

import (
	"errors"
	"fmt"
	"log"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/IBM/sarama"
)

// Variants.
const (
	Bad   = "bad"
	Fixed = "fixed"
)

// Topics are the three log streams each request writes one message to.
var Topics = [3]string{"access-log", "bid-log", "win-log"}

const brokerID = 1

// RotateEvery is how often the handler replaces its broker and producer.
// sarama's MockBroker keeps every request it has answered (its History) for
// tests to inspect; a long-running service would otherwise hold every message
// it ever sent. A fresh pair every second bounds that memory to one second of
// traffic, at the cost of a metadata request and a new connection per second.
// Tests may change it before NewHandler.
var RotateEvery = time.Second

// Handler is the ad service. It is an http.Handler; Close flushes the
// producer and stops the broker.
type Handler struct {
	variant string
	every   time.Duration
	seq     atomic.Uint64
	failed  atomic.Int64

	mu  sync.RWMutex // held for reading while sending; for writing to swap gen
	gen *generation

	stop, stopped chan struct{}
	closeOnce     sync.Once
	closeErr      error
}

// generation is a mock broker with the producer that writes to it.
type generation struct {
	broker   *sarama.MockBroker
	client   sarama.Client
	producer sarama.AsyncProducer
	rep      reporter
	errsDone chan struct{}
}

// NewHandler starts the mock broker and the variant's producer.
func NewHandler(variant string) (*Handler, error) {
	if variant != Bad && variant != Fixed {
		return nil, fmt.Errorf("a1producer: unknown variant %q (want %q or %q)", variant, Bad, Fixed)
	}
	h := &Handler{variant: variant, every: RotateEvery, stop: make(chan struct{}), stopped: make(chan struct{})}
	g, err := h.newGeneration()
	if err != nil {
		return nil, err
	}
	h.gen = g
	go h.rotate()
	return h, nil
}

// newGeneration starts a mock broker on 127.0.0.1:0 that leads one partition
// of each topic, and a producer connected to it.
func (h *Handler) newGeneration() (*generation, error) {
	g := &generation{errsDone: make(chan struct{})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("a1producer: broker listener: %w", err)
	}
	g.broker = sarama.NewMockBrokerListener(&g.rep, brokerID, ln)
	meta := sarama.NewMockMetadataResponse(&g.rep).SetBroker(g.broker.Addr(), brokerID).SetController(brokerID)
	for _, t := range Topics {
		meta.SetLeader(t, 0, brokerID)
	}
	g.broker.SetHandlerByMap(map[string]sarama.MockResponse{
		"MetadataRequest": meta,
		"ProduceRequest":  sarama.NewMockProduceResponse(&g.rep),
	})
	// Resolve every topic's leader and open its connection before the
	// producer takes traffic: a producer that does this lazily on its first
	// messages can race its own metadata refresh, lose that connection and
	// retry, and a retry still pending when the generation is rotated out
	// fails with ErrShuttingDown.
	client, err := sarama.NewClient([]string{g.broker.Addr()}, Config(h.variant))
	if err != nil {
		g.broker.Close()
		return nil, fmt.Errorf("a1producer: client: %w", err)
	}
	for _, t := range Topics {
		leader, err := client.Leader(t, 0)
		if err == nil {
			_, err = leader.Connected()
		}
		if err != nil {
			client.Close()
			g.broker.Close()
			return nil, fmt.Errorf("a1producer: leader of %s: %w", t, err)
		}
	}
	p, err := sarama.NewAsyncProducerFromClient(client)
	if err != nil {
		client.Close()
		g.broker.Close()
		return nil, fmt.Errorf("a1producer: producer: %w", err)
	}
	g.producer, g.client = p, client
	go func() {
		defer close(g.errsDone)
		for pe := range p.Errors() {
			if h.failed.Add(1) <= 5 {
				log.Printf("a1producer: produce %s: %v", pe.Msg.Topic, pe.Err)
			}
		}
	}()
	return g, nil
}

// close flushes and closes the producer, then stops the broker.
func (g *generation) close() error {
	err := g.producer.Close()
	<-g.errsDone
	err = errors.Join(err, g.client.Close())
	g.broker.Close()
	return errors.Join(err, g.rep.err())
}

// rotate replaces the generation every RotateEvery until Close.
func (h *Handler) rotate() {
	defer close(h.stopped)
	t := time.NewTicker(h.every)
	defer t.Stop()
	for {
		select {
		case <-h.stop:
			return
		case <-t.C:
		}
		g, err := h.newGeneration()
		if err != nil {
			log.Printf("a1producer: rotate: %v", err)
			continue
		}
		h.mu.Lock()
		old := h.gen
		h.gen = g
		h.mu.Unlock()
		if err := old.close(); err != nil {
			log.Printf("a1producer: rotate: %v", err)
		}
	}
}

// Config is the variant's sarama configuration.
func Config(variant string) *sarama.Config {
	c := sarama.NewConfig()
	c.ClientID = "a1-exchange"
	c.ApiVersionsRequest = false // the mock broker is not asked which versions it speaks
	c.Producer.RequiredAcks = sarama.WaitForLocal
	c.Producer.Return.Errors = true
	c.Producer.Return.Successes = false
	if variant == Fixed {
		c.Producer.Flush.Frequency = 500 * time.Millisecond
		c.Producer.Flush.Messages = 1000
	} else {
		// As soon as a message arrives it is sent, alone.
		c.Producer.Flush.Frequency = 0
		c.Producer.Flush.Messages = 0
		c.Producer.Flush.MaxMessages = 1
	}
	return c
}

// Failed counts messages the producer reported as failed.
func (h *Handler) Failed() int64 { return h.failed.Load() }

// Close stops the rotation, flushes and closes the producer, then stops the
// broker.
func (h *Handler) Close() error {
	h.closeOnce.Do(func() {
		close(h.stop)
		<-h.stopped
		h.mu.Lock()
		defer h.mu.Unlock()
		h.closeErr = h.gen.close()
		if n := h.failed.Load(); n > 0 {
			h.closeErr = errors.Join(h.closeErr, fmt.Errorf("a1producer: %d messages failed", n))
		}
	})
	return h.closeErr
}

// ServeHTTP runs an auction and logs it to the three streams.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	seq := h.seq.Add(1)
	price, winner := auction(seq)
	now := time.Now().UnixMilli()
	h.mu.RLock()
	in := h.gen.producer.Input()
	for i, topic := range Topics {
		in <- &sarama.ProducerMessage{
			Topic: topic,
			Key:   sarama.ByteEncoder(strconv.AppendUint(make([]byte, 0, 20), seq, 10)),
			Value: sarama.ByteEncoder(logLine(i, seq, now, price, winner)),
		}
	}
	h.mu.RUnlock()
	buf := make([]byte, 0, 48)
	buf = append(buf, "ok seq="...)
	buf = strconv.AppendUint(buf, seq, 10)
	buf = append(buf, " price="...)
	buf = strconv.AppendUint(buf, price, 10)
	buf = append(buf, '\n')
	w.Header().Set("Content-Type", "text/plain")
	w.Write(buf)
}

// logLine renders one stream's record for the request.
func logLine(stream int, seq uint64, now int64, price uint64, winner int) []byte {
	b := make([]byte, 0, 256)
	b = append(b, `{"stream":"`...)
	b = append(b, Topics[stream]...)
	b = append(b, `","ts":`...)
	b = strconv.AppendInt(b, now, 10)
	b = append(b, `,"req":`...)
	b = strconv.AppendUint(b, seq, 10)
	b = append(b, `,"bidder":`...)
	b = strconv.AppendInt(b, int64(winner), 10)
	b = append(b, `,"price_micros":`...)
	b = strconv.AppendUint(b, price, 10)
	b = append(b, `,"slot":"banner-300x250","geo":"CN","device":"mobile","os":"android","publisher":"pub-`...)
	b = strconv.AppendUint(b, seq%977, 10)
	b = append(b, `"}`...)
	return b
}

// Bidding work, the same in both variants: score Bidders bidders, several
// rounds each. Split in three functions (not inlined) so that no single
// application function dominates the profile.
const (
	Bidders = 64
	rounds  = 160
)

func auction(seq uint64) (price uint64, winner int) {
	seed := seq*0x9e3779b97f4a7c15 ^ rand.Uint64()
	var best, second uint64
	for b := range Bidders {
		s := relevance(seed, b) ^ pacing(seed, b) ^ floor(seed, b)
		if s > best {
			best, second, winner = s, best, b
		} else if s > second {
			second = s
		}
	}
	return second%5_000_000 + 1, winner
}

//go:noinline
func relevance(seed uint64, bidder int) uint64 {
	h := seed ^ uint64(bidder)
	for range rounds {
		h ^= h >> 33
		h *= 0xff51afd7ed558ccd
		h ^= h >> 29
	}
	return h
}

//go:noinline
func pacing(seed uint64, bidder int) uint64 {
	h := seed + uint64(bidder)*0xbf58476d1ce4e5b9
	for range rounds {
		h = (h ^ (h >> 30)) * 0x94d049bb133111eb
		h ^= h >> 31
	}
	return h
}

//go:noinline
func floor(seed uint64, bidder int) uint64 {
	h := seed ^ 0xc4ceb9fe1a85ec53 ^ uint64(bidder)<<17
	for range rounds {
		h = (h ^ (h >> 27)) * 0x2545f4914f6cdd1d
		h += h << 13
	}
	return h
}

// reporter receives the mock broker's errors (it takes a test's reporter).
type reporter struct {
	mu    sync.Mutex
	first error
	n     int
}

func (r *reporter) record(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.n++
	if r.first == nil {
		r.first = err
	}
	if r.n <= 5 {
		log.Printf("a1producer: mock broker: %v", err)
	}
}

func (r *reporter) err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.first == nil {
		return nil
	}
	return fmt.Errorf("mock broker reported %d errors, first: %w", r.n, r.first)
}

func (r *reporter) Error(args ...any)                 { r.record(errors.New(fmt.Sprint(args...))) }
func (r *reporter) Errorf(format string, args ...any) { r.record(fmt.Errorf(format, args...)) }
func (r *reporter) Fatal(args ...any)                 { r.record(errors.New(fmt.Sprint(args...))) }
func (r *reporter) Fatalf(format string, args ...any) { r.record(fmt.Errorf(format, args...)) }
func (r *reporter) Helper()                           {}

var _ sarama.TestReporter = (*reporter)(nil)
