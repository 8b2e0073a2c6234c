package c3thrift

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/apache/thrift/lib/go/thrift"
)

// countingConn counts Write calls: one per write(2) on a real socket.
type countingConn struct {
	net.Conn
	writes int
}

func (c *countingConn) Write(p []byte) (int, error) { c.writes++; return len(p), nil }

func TestHandler(t *testing.T) {
	for _, v := range []string{Bad, Fixed} {
		h, err := NewHandler(v, "")
		if err != nil {
			t.Fatal(err)
		}
		const reqs = 5
		for range reqs {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
			if rec.Code != http.StatusOK || !strings.HasPrefix(rec.Body.String(), "rows=4 ") {
				t.Fatalf("%s: %d %q", v, rec.Code, rec.Body.String())
			}
		}
		deadline := time.Now().Add(2 * time.Second)
		for h.Received() < reqs*500 && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		if h.Received() < reqs*500 {
			t.Errorf("%s: sink got %d bytes", v, h.Received())
		}
		if err := h.Close(); err != nil {
			t.Error(err)
		}
	}
}

// TestWrites counts the writes one message makes on each variant's
// transport stack, and decodes the message back.
func TestWrites(t *testing.T) {
	ctx := context.Background()
	rows := []*Record{newRecord(1, 0), newRecord(1, 1), newRecord(1, 2), newRecord(1, 3)}
	for _, v := range []string{Bad, Fixed} {
		pc, peer := net.Pipe() // for its addresses; Write never reaches it
		defer pc.Close()
		defer peer.Close()
		conn := &countingConn{Conn: pc}
		sock := thrift.NewTSocketFromConnConf(conn, &thrift.TConfiguration{})
		c := &client{sock: sock, trans: sock}
		if v == Fixed {
			c.trans = thrift.NewTBufferedTransport(sock, BufferSize)
		}
		c.proto = thrift.NewTBinaryProtocolConf(c.trans, &thrift.TConfiguration{})
		if err := putRecords(ctx, c, 7, "ad_events", rows); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %d writes per message", v, conn.writes)
		if v == Bad && conn.writes < 50*len(rows) || v == Fixed && conn.writes != 1 {
			t.Errorf("%s: %d writes for %d rows", v, conn.writes, len(rows))
		}
	}

	mem := thrift.NewTMemoryBuffer()
	p := thrift.NewTBinaryProtocolConf(mem, &thrift.TConfiguration{})
	if err := putRecords(ctx, &client{trans: mem, proto: p}, 7, "ad_events", rows); err != nil {
		t.Fatal(err)
	}
	name, typ, seq, err := p.ReadMessageBegin(ctx)
	if err != nil || name != "putRecords" || typ != thrift.ONEWAY || seq != 7 {
		t.Fatalf("message %q %v %d: %v", name, typ, seq, err)
	}
	if err := thrift.SkipDefaultDepth(ctx, p, thrift.STRUCT); err != nil {
		t.Fatalf("decoding the arguments: %v", err)
	}
	if err := p.ReadMessageEnd(ctx); err != nil || mem.Len() != 0 {
		t.Errorf("%d bytes left over: %v", mem.Len(), err)
	}
}

func TestExternalDownstream(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	got := make(chan int64, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- -1
			return
		}
		n, _ := io.Copy(io.Discard, c)
		got <- n
	}()
	h, err := NewHandler(Fixed, ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("%d %q", rec.Code, rec.Body.String())
	}
	h.Close()
	if n := <-got; n < 500 {
		t.Errorf("downstream got %d bytes", n)
	}
}

func TestInvalidVariant(t *testing.T) {
	if _, err := NewHandler("worse", ""); err == nil {
		t.Error("accepted an unknown variant")
	}
}
