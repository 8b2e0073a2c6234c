// Package c3thrift reproduces casebook case C3, syscall-per-write: a Kafka
// worker wrote rows to HBase through Apache Thrift's TSocket transport
// without a buffer, so every serialized field became its own write system
// call: about 50% of relative CPU. TBufferedTransport made it a sliver.
//
// Each request writes RowsPerRequest event rows (a Thrift struct of 16
// fields) as one oneway putRecords call, TBinaryProtocol, to a TCP sink that
// the handler starts on 127.0.0.1:0 (or to -downstream host:port). Clients
// come from a small pool of connections.
//
//   - Bad: TBinaryProtocol directly over TSocket: each field header, value,
//     string length and string body is a write(2), about 56 per row.
//   - Fixed: TBinaryProtocol over TBufferedTransport(TSocket, 64 KiB), with
//     one Flush per message: one write(2) per request.
//
// The Write methods are written by hand in the style of the Thrift
// compiler's output (see record.go); the IDL is in its comment.
//
// This is "any Go service": it imports nothing from perfdoctor.
package c3thrift

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/apache/thrift/lib/go/thrift"
)

// Variants.
const (
	Bad   = "bad"
	Fixed = "fixed"
)

// RowsPerRequest is how many rows each request writes; BufferSize is the
// fixed variant's transport buffer.
const (
	RowsPerRequest = 4
	BufferSize     = 64 << 10
	maxIdle        = 64
)

// Handler is the ingress service. It is an http.Handler; Close releases the
// pooled connections and the sink.
type Handler struct {
	variant string
	addr    string
	seq     atomic.Int32
	idle    chan *client

	sink     net.Listener // nil with an external downstream
	received atomic.Int64
	sinkWG   sync.WaitGroup
	connsMu  sync.Mutex
	conns    map[net.Conn]struct{}
}

// client is one connection with its transport stack.
type client struct {
	sock  *thrift.TSocket
	trans thrift.TTransport // what Flush is called on
	proto thrift.TProtocol
}

// NewHandler returns the variant's handler. downstream is a TCP host:port;
// "" starts a discarding sink on 127.0.0.1:0.
func NewHandler(variant, downstream string) (*Handler, error) {
	if variant != Bad && variant != Fixed {
		return nil, fmt.Errorf("c3thrift: unknown variant %q (want %q or %q)", variant, Bad, Fixed)
	}
	h := &Handler{variant: variant, addr: downstream, idle: make(chan *client, maxIdle)}
	if downstream == "" {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("c3thrift: start sink: %w", err)
		}
		h.sink, h.addr, h.conns = ln, ln.Addr().String(), map[net.Conn]struct{}{}
		h.sinkWG.Add(1)
		go h.accept()
	}
	return h, nil
}

// Downstream is the address rows are written to.
func (h *Handler) Downstream() string { return h.addr }

// Received counts bytes the built-in sink has read.
func (h *Handler) Received() int64 { return h.received.Load() }

// Close closes idle clients and stops the sink.
func (h *Handler) Close() error {
	for {
		select {
		case c := <-h.idle:
			c.sock.Close()
			continue
		default:
		}
		break
	}
	if h.sink == nil {
		return nil
	}
	err := h.sink.Close()
	h.connsMu.Lock()
	for c := range h.conns {
		c.Close()
	}
	h.connsMu.Unlock()
	h.sinkWG.Wait()
	return err
}

func (h *Handler) accept() {
	defer h.sinkWG.Done()
	for {
		c, err := h.sink.Accept()
		if err != nil {
			return
		}
		h.connsMu.Lock()
		h.conns[c] = struct{}{}
		h.connsMu.Unlock()
		h.sinkWG.Add(1)
		go h.drain(c)
	}
}

// drain reads and discards what a client writes, as fast as it comes.
func (h *Handler) drain(c net.Conn) {
	defer h.sinkWG.Done()
	buf := make([]byte, 64<<10)
	for {
		n, err := c.Read(buf)
		h.received.Add(int64(n))
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				c.Close()
			}
			break
		}
	}
	h.connsMu.Lock()
	delete(h.conns, c)
	h.connsMu.Unlock()
	c.Close()
}

// get returns an idle client or dials a new one.
func (h *Handler) get() (*client, error) {
	select {
	case c := <-h.idle:
		return c, nil
	default:
	}
	sock := thrift.NewTSocketConf(h.addr, &thrift.TConfiguration{})
	if err := sock.Open(); err != nil {
		return nil, err
	}
	c := &client{sock: sock, trans: sock}
	if h.variant == Fixed {
		c.trans = thrift.NewTBufferedTransport(sock, BufferSize)
	}
	c.proto = thrift.NewTBinaryProtocolConf(c.trans, &thrift.TConfiguration{})
	return c, nil
}

// put returns a healthy client to the pool, or closes it.
func (h *Handler) put(c *client, healthy bool) {
	if healthy {
		select {
		case h.idle <- c:
			return
		default:
		}
	}
	c.sock.Close()
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	seq := h.seq.Add(1)
	rows := make([]*Record, RowsPerRequest)
	base := rand.Int64N(1 << 40)
	for i := range rows {
		rows[i] = newRecord(base, int64(i))
	}
	c, err := h.get()
	if err != nil {
		http.Error(w, "downstream: "+err.Error(), http.StatusBadGateway)
		return
	}
	err = putRecords(r.Context(), c, seq, "ad_events", rows)
	h.put(c, err == nil)
	if err != nil {
		http.Error(w, "downstream: "+err.Error(), http.StatusBadGateway)
		return
	}
	var b [48]byte
	resp := append(b[:0], "rows="...)
	resp = strconv.AppendInt(resp, RowsPerRequest, 10)
	resp = append(resp, " seq="...)
	resp = strconv.AppendInt(resp, int64(seq), 10)
	resp = append(resp, '\n')
	w.Header().Set("Content-Type", "text/plain")
	w.Write(resp)
}

// putRecords sends one oneway putRecords call and flushes the transport.
func putRecords(ctx context.Context, c *client, seq int32, table string, rows []*Record) error {
	if err := c.proto.WriteMessageBegin(ctx, "putRecords", thrift.ONEWAY, seq); err != nil {
		return err
	}
	args := PutRecordsArgs{Table: table, Records: rows}
	if err := args.Write(ctx, c.proto); err != nil {
		return err
	}
	if err := c.proto.WriteMessageEnd(ctx); err != nil {
		return err
	}
	return c.trans.Flush(ctx)
}

var (
	slots     = []string{"banner-300x250", "banner-728x90", "native-feed", "video-preroll"}
	countries = []string{"CN", "US", "DE", "JP", "BR", "IN"}
	devices   = []string{"mobile", "desktop", "tablet"}
	systems   = []string{"android", "ios", "windows", "macos"}
)

func newRecord(base, i int64) *Record {
	id := base + i
	return &Record{
		RowKey:        "evt#" + strconv.FormatInt(id, 36),
		Ts:            1_700_000_000_000 + id%86_400_000,
		UserID:        id % 9_999_991,
		CampaignID:    int32(id % 5_003),
		CreativeID:    int32(id % 40_009),
		Slot:          slots[id%int64(len(slots))],
		Country:       countries[id%int64(len(countries))],
		Device:        devices[id%int64(len(devices))],
		Os:            systems[id%int64(len(systems))],
		Price:         float64(id%3_000) / 1000,
		BidFloor:      0.25,
		LatencyMicros: int32(id % 20_000),
		Clicked:       id%37 == 0,
		Converted:     id%401 == 0,
		SessionID:     id * 31,
		Publisher:     "pub-" + strconv.FormatInt(id%977, 10),
	}
}
