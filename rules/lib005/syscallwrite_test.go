package lib005

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/perfdoctor/perfdoctor/facts"

	"github.com/google/pprof/profile"

	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/internal/testprof"
	"github.com/perfdoctor/perfdoctor/rules"
)

// dial returns a client connection to a loopback server that discards
// everything it receives.
func dial(t *testing.T) net.Conn {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { io.Copy(io.Discard, c); c.Close() }()
		}
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

type record struct {
	id, ts int64
	size   uint32
	name   string
}

var rec = record{id: 42, ts: 1700000000, size: 512, name: "impression"}

// writeRecord serializes a record field by field to w.
func writeRecord(w io.Writer) {
	binary.Write(w, binary.BigEndian, rec.id)
	binary.Write(w, binary.BigEndian, rec.ts)
	binary.Write(w, binary.BigEndian, rec.size)
	fmt.Fprintf(w, "%s;", rec.name)
}

func unbuffered(c net.Conn) func() { return func() { writeRecord(c) } }

func buffered(c net.Conn) func() {
	bw := bufio.NewWriter(c)
	return func() {
		writeRecord(bw)
		bw.Flush()
	}
}

func run(cpu *profile.Profile) rules.Result {
	return rules.Run(facts.New(testprof.Evidence(map[evidence.Kind]*profile.Profile{evidence.CPU: cpu})), []*rules.Rule{Rule})
}

func TestFiresOnFieldWritesToTCP(t *testing.T) {
	res := run(testprof.CPU(t, 2*time.Second, 1, unbuffered(dial(t))))
	if len(res.Findings) != 1 {
		t.Fatalf("want a syscall-per-write finding, got %d (%v)", len(res.Findings), res.NotChecked)
	}
	f := res.Findings[0]
	if f.Impact < 0.2 || f.Severity != rules.High {
		t.Errorf("impact %.2f severity %s: want high", f.Impact, f.Severity)
	}
	if len(f.Locations) == 0 || !strings.Contains(f.Locations[0].Function, "writeRecord") {
		t.Errorf("locations %+v do not name writeRecord", f.Locations)
	}
	if !strings.Contains(f.Fix, "bufio.Writer") {
		t.Errorf("fix %q", f.Fix)
	}
}

func TestSilentThroughBufio(t *testing.T) {
	res := run(testprof.CPU(t, 2*time.Second, 1, buffered(dial(t))))
	if len(res.Findings) != 0 {
		t.Fatalf("buffered writes reported: %+v", res.Findings[0])
	}
}

func stack(v int64, funcs ...string) testprof.Stack { return testprof.Stack{Value: v, Funcs: funcs} }

func cat(parts ...[]string) []string {
	var out []string
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// Symbol names as in github.com/apache/thrift v0.2x lib/go/thrift
// (binary_protocol.go, socket.go, rich_transport.go, buffered_transport.go,
// framed_transport.go); gen-go code as the Thrift compiler generates it.
const th = "github.com/apache/thrift/lib/go/thrift."

var (
	netWrite = []string{"syscall.Syscall", "syscall.write", "internal/poll.ignoringEINTRIO", "internal/poll.(*FD).Write", "net.(*netFD).Write", "net.(*conn).Write"}
	socket   = []string{th + "(*TSocket).Write", th + "(*RichTransport).Write"}
	put      = []string{"github.com/acme/ingest/gen-go/hbase.(*TPut).Write", "github.com/acme/ingest/gen-go/hbase.(*THBaseServicePutArgs).Write",
		th + "(*TStandardClient).Send", th + "(*TStandardClient).Call", "github.com/acme/ingest/gen-go/hbase.(*THBaseServiceClient).Put", "main.(*sink).store"}
)

// Case C3: HBase puts through Thrift without a buffered transport.
func TestFiresOnThriftOverBareSocket(t *testing.T) {
	cpu := testprof.Build(
		stack(250, cat(netWrite, socket, []string{th + "(*TBinaryProtocol).WriteI32", th + "(*TBinaryProtocol).WriteString", "github.com/acme/ingest/gen-go/hbase.(*TColumnValue).writeField1"}, put)...),
		stack(150, cat(netWrite, socket, []string{th + "(*TBinaryProtocol).WriteFieldBegin", "github.com/acme/ingest/gen-go/hbase.(*TColumnValue).writeField2"}, put)...),
		stack(100, cat(netWrite, socket, []string{th + "writeByte", th + "(*RichTransport).WriteByte", th + "(*TBinaryProtocol).WriteByte", th + "(*TBinaryProtocol).WriteFieldStop"}, put)...),
		stack(500, "main.(*sink).transform"),
	)
	res := run(cpu)
	if len(res.Findings) != 1 {
		t.Fatalf("unbuffered thrift not reported: %+v", res)
	}
	f := res.Findings[0]
	if f.Impact < 0.44 || !strings.Contains(f.Fix, "TBufferedTransport") || !strings.Contains(f.Summary, "Thrift") {
		t.Errorf("impact %.2f summary %q fix %q", f.Impact, f.Summary, f.Fix)
	}
	if len(f.Locations) == 0 || !strings.Contains(f.Locations[0].Function, "gen-go/hbase.(*TColumnValue).writeField1") {
		t.Errorf("locations %+v", f.Locations)
	}
}

func TestSilentThroughThriftBufferedAndFramedTransports(t *testing.T) {
	cpu := testprof.Build(
		// TBufferedTransport: bufio flushes once per call.
		stack(200, cat(netWrite, socket, []string{"bufio.(*Writer).Flush", th + "(*TBufferedTransport).Flush", th + "(*TStandardClient).Send"}, put[2:])...),
		// and when its buffer fills mid-message.
		stack(50, cat(netWrite, socket, []string{"bufio.(*Writer).Write", th + "(*TBufferedTransport).Write", th + "(*TBinaryProtocol).WriteString"}, put)...),
		// TFramedTransport writes the frame at Flush.
		stack(150, cat(netWrite, socket, []string{th + "(*TFramedTransport).Flush", th + "(*TStandardClient).Send"}, put[2:])...),
		stack(600, "main.(*sink).transform"),
	)
	if res := run(cpu); len(res.Findings) != 0 {
		t.Fatalf("buffered thrift transports reported: %+v", res.Findings[0])
	}
}

func TestApplicationWritingFromSeveralLines(t *testing.T) {
	p := testprof.Build(
		stack(100, cat(netWrite, []string{"main.(*peer).send", "main.serve"})...),
		stack(100, cat(netWrite, []string{"main.(*peer).send", "main.serve"})...),
		stack(100, cat(netWrite, []string{"main.(*peer).send", "main.serve"})...),
		stack(700, "main.serve"),
	)
	// testprof.Build gives a function one line: make sample i call Write
	// from another line of send.
	relocate := func(i int, line int64) {
		s, at := p.Sample[i], len(netWrite)
		loc := *s.Location[at]
		loc.ID = uint64(len(p.Location) + 1)
		loc.Line = []profile.Line{{Function: loc.Line[0].Function, Line: line}}
		p.Location = append(p.Location, &loc)
		s.Location = append([]*profile.Location{}, s.Location...)
		s.Location[at] = &loc
	}
	if res := run(p); len(res.Findings) != 0 {
		t.Fatalf("one write call site reported: %+v", res.Findings[0])
	}
	relocate(1, 98) // a header and a body: two writes per message
	if res := run(p); len(res.Findings) != 0 {
		t.Fatalf("two write call sites reported: %+v", res.Findings[0])
	}
	relocate(2, 99) // field by field
	res := run(p)
	if len(res.Findings) != 1 || !strings.Contains(res.Findings[0].Summary, "application code") {
		t.Fatalf("application writing from three lines: %+v", res.Findings)
	}
	if fr := res.Findings[0].Frames; len(fr) == 0 || fr[len(fr)-1] != "main.(*peer).send" {
		t.Errorf("frames %v", fr)
	}
}

func TestSilentOnOneWritePerMessageAndLoggers(t *testing.T) {
	cpu := testprof.Build(
		// sarama writes each produce request once, from one line.
		stack(150, cat(netWrite, []string{"github.com/IBM/sarama.(*Broker).write", "github.com/IBM/sarama.(*Broker).sendInternal"})...),
		// logrus writes each line straight to stderr: LIB008's.
		stack(150, "syscall.write", "internal/poll.(*FD).Write", "os.(*File).Write", "github.com/sirupsen/logrus.(*Entry).write", "github.com/sirupsen/logrus.(*Entry).log", "main.handle"),
		stack(150, "syscall.write", "internal/poll.(*FD).Write", "os.(*File).Write", "log.(*Logger).output", "log.Printf", "main.handle"),
		stack(550, "main.handle"),
	)
	if res := run(cpu); len(res.Findings) != 0 {
		t.Fatalf("per-message writes / loggers reported: %+v", res.Findings[0])
	}
}
