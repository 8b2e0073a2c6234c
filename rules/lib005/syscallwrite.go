// Package lib005 detects small writes that each reach a system call
// because nothing buffers them (finding class syscall-per-write).
package lib005

import (
	"fmt"
	"sort"

	"github.com/perfdoctor/perfdoctor/facts"

	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/facts/frames"
	"github.com/perfdoctor/perfdoctor/internal/human"
	"github.com/perfdoctor/perfdoctor/rules"
)

// Rule is LIB005.
var Rule = &rules.Rule{
	ID:    "LIB005",
	Class: "syscall-per-write",
	Doc: rules.Doc{
		Title: "Small writes each reach a system call",
		Text: `A serializer that writes field by field to an unbuffered connection or file
makes a write system call per field: a Thrift protocol over a bare TSocket,
encoding/binary.Write or fmt.Fprintf straight to a net.Conn or *os.File. Each
call crosses into the kernel and runs the TCP stack for a few bytes, so the
system calls cost far more than the encoding they carry.`,
		Evidence: `CPU samples in a write system call (internal/poll.(*FD).Write, syscall.write,
golang.org/x/sys/unix.write) are followed up the stack past the layers that
only pass the bytes on (os.File, net.conn, crypto/tls, Thrift's TSocket and
RichTransport). The first frame above them decides: a field writer (Thrift
TBinaryProtocol/TCompactProtocol/TJSONProtocol methods, encoding/binary.Write,
fmt.Fprint*, io.WriteString) counts; a buffer (bufio.Writer, Thrift's
TBufferedTransport, TFramedTransport, THeaderTransport, bytes.Buffer.WriteTo)
means the writes are batched and the sample does not count; application code
counts when one function writes from three or more lines (field by field;
a header and a body are two writes per message, not a field writer);
frames.Loggers are left to LIB008. Reports from 3% of CPU.`,
		Fix: `Buffer and flush once per message: a bufio.Writer between the serializer and
the connection, Thrift's TBufferedTransport or TFramedTransport around the
socket, or build the message in a []byte (binary.BigEndian.AppendUint32,
strconv.AppendInt) and write it once.`,
		Before:  `trans := thrift.NewTSocketConf(addr, cfg)                     // a write per field`,
		After:   `trans := thrift.NewTBufferedTransport(thrift.NewTSocketConf(addr, cfg), 8192) // one per call`,
		Caveats: caveat,
		Since:   "0.1",
		Refs: []string{
			"https://pkg.go.dev/bufio#Writer",
			"https://pkg.go.dev/github.com/apache/thrift/lib/go/thrift#TBufferedTransport",
		},
	},
	Needs: []rules.Input{rules.CPU},
	Facts: []facts.Key{facts.CPUStacks},
	Check: check,
}

const caveat = "A buffered writer must be flushed at the end of each message, or the peer waits for bytes that sit in the buffer."

var thriftPaths = []string{"github.com/apache/thrift/lib/go/thrift.", "git.apache.org/thrift.git/lib/go/thrift."}

func thrift(symbols ...string) evidence.Matcher {
	var ps []string
	for _, p := range thriftPaths {
		for _, s := range symbols {
			ps = append(ps, p+s)
		}
	}
	return evidence.FuncPrefix(ps...)
}

var (
	// passThrough only hands the bytes on towards the kernel.
	passThrough = evidence.Any(
		evidence.FuncPrefix("runtime.", "internal/runtime/", "runtime/internal/", "syscall.", "internal/poll.",
			"golang.org/x/sys/unix.", "net.(*netFD).Write", "net.(*conn).Write", "net.(*TCPConn).Write",
			"net.(*UnixConn).Write", "os.(*File).Write", "os.(*File).write", "crypto/tls.(*Conn)."),
		thrift("(*TSocket).Write", "(*socketConn).Write", "(*TSSLSocket).Write", "(*RichTransport).Write", "writeByte"),
	)
	thriftProtocol = thrift("(*TBinaryProtocol).", "(*TCompactProtocol).", "(*TJSONProtocol).", "(*TSimpleJSONProtocol).")
	binaryWrite    = evidence.FuncPrefix("encoding/binary.Write")
	fmtWrite       = evidence.FuncPrefix("fmt.Fprint")
	ioWriteString  = evidence.FuncPrefix("io.WriteString")
	buffers        = evidence.Any(
		evidence.FuncPrefix("bufio.(*Writer).", "bufio.(*ReadWriter).", "bytes.(*Buffer).WriteTo", "net.(*Buffers)."),
		thrift("(*TBufferedTransport).", "(*TFramedTransport).", "(*THeaderTransport).", "(*TZlibTransport).", "(*TMemoryBuffer)."),
	)
)

// writer is a kind of field writer found directly above write system calls.
type writer struct {
	name    string
	frames  evidence.Matcher
	fix     string
	example string
}

const bufioFix = "Put a bufio.Writer between the writer and the connection or file (bufio.NewWriterSize(conn, 32<<10)) and Flush once per message, or build the message in a []byte (binary.BigEndian.AppendUint32, strconv.AppendInt) and Write it once."

var writers = []writer{
	{name: "Thrift protocol over an unbuffered transport", frames: thriftProtocol,
		fix: "Wrap the Thrift socket in a buffered or framed transport so a call is written once, at the client's Flush: " +
			"thrift.NewTBufferedTransport(socket, 8192), or TFramedTransport if the server expects framing (with a factory: " +
			"thrift.NewTBufferedTransportFactory(8192) / NewTFramedTransportFactoryConf). In case C3 this took HBase writes from " +
			"~50% of relative CPU to a sliver.",
		example: "trans := thrift.NewTSocketConf(addr, cfg)\n->\ntrans := thrift.NewTBufferedTransport(thrift.NewTSocketConf(addr, cfg), 8192)"},
	{name: "encoding/binary.Write to an unbuffered writer", frames: binaryWrite, fix: bufioFix,
		example: "binary.Write(conn, binary.BigEndian, v)\n->\nbw := bufio.NewWriter(conn); binary.Write(bw, binary.BigEndian, v); ...; bw.Flush()"},
	{name: "fmt.Fprint* to an unbuffered writer", frames: fmtWrite, fix: bufioFix,
		example: "fmt.Fprintf(conn, \"%d,\", v)\n->\nbw := bufio.NewWriter(conn); fmt.Fprintf(bw, \"%d,\", v); ...; bw.Flush()"},
	{name: "io.WriteString to an unbuffered writer", frames: ioWriteString, fix: bufioFix},
}

const (
	minShare    = 0.03
	recoverable = 0.9 // one write per message instead of one per field
	minAppLines = 3   // application code writing field by field
)

func check(pass *rules.Pass) error {
	if !pass.EnoughCPU() {
		return nil
	}
	cpu := facts.Get(pass.Facts, facts.CPUStacks)
	inSyscall := cpu.FrameHits(frames.WriteSyscall)
	isPass := cpu.FrameHits(passThrough)
	isBuffer := cpu.FrameHits(buffers)
	isLogger := cpu.FrameHits(frames.Loggers)
	isApp := cpu.FrameHits(rules.IsApplication)
	kind := make([][]bool, len(writers))
	for i, w := range writers {
		kind[i] = cpu.FrameHits(w.frames)
	}

	// writerOf is the first frame above the pass-through layers of a sample
	// in a write system call, or -1.
	writerOf := func(s evidence.Sample) int32 {
		in := false
		for _, id := range s.Frames {
			if inSyscall[id] {
				in = true
			}
			if !in || isPass[id] {
				continue
			}
			return id
		}
		return -1
	}

	// Application functions count when they write from several lines.
	appLines := map[string]map[int64]bool{}
	for _, s := range cpu.Samples {
		if id := writerOf(s); id >= 0 && isApp[id] && !isBuffer[id] && !isLogger[id] {
			fr := cpu.Frames[id]
			if appLines[fr.Func] == nil {
				appLines[fr.Func] = map[int64]bool{}
			}
			appLines[fr.Func][fr.Line] = true
		}
	}

	const appKind = -2
	classify := func(s evidence.Sample) (int, int32) {
		id := writerOf(s)
		if id < 0 || isBuffer[id] || isLogger[id] {
			return -1, id
		}
		for i := range writers {
			if kind[i][id] {
				return i, id
			}
		}
		if isApp[id] && len(appLines[cpu.Frames[id].Func]) >= minAppLines {
			return appKind, id
		}
		return -1, id
	}

	byKind := map[int]int64{}
	var total int64
	for _, s := range cpu.Samples {
		if k, _ := classify(s); k != -1 {
			byKind[k] += s.Value
			total += s.Value
		}
	}
	share := float64(total) / float64(cpu.Total)
	if share < minShare {
		return nil
	}
	kinds := make([]int, 0, len(byKind))
	for k := range byKind {
		kinds = append(kinds, k)
	}
	sort.Slice(kinds, func(i, j int) bool {
		if byKind[kinds[i]] != byKind[kinds[j]] {
			return byKind[kinds[i]] > byKind[kinds[j]]
		}
		return kinds[i] < kinds[j]
	})

	app := func(fn string) bool { return rules.IsApplication(fn) && !frames.Loggers(fn) }
	callers := make([]func(evidence.Sample) *evidence.Frame, len(writers))
	for i, w := range writers {
		callers[i] = cpu.CallerOf(w.frames, app)
	}
	sites := cpu.TopSites(5, func(s evidence.Sample) *evidence.Frame {
		k, id := classify(s)
		switch {
		case k == appKind:
			return &cpu.Frames[id]
		case k >= 0:
			return callers[k](s)
		}
		return nil
	})

	name, fix, example := "application code writing field by field", bufioFix, ""
	if top := kinds[0]; top >= 0 {
		name, fix, example = writers[top].name, writers[top].fix, writers[top].example
	}
	impact := share * recoverable
	f := rules.Finding{
		Severity:    rules.SeverityFor(impact),
		Impact:      impact,
		Resource:    "cpu",
		ImpactBasis: "share of CPU in write system calls made directly by field writers; buffering leaves one write per message instead of one per field, so about 90% of it",
		Summary:     fmt.Sprintf("Unbuffered small writes use %s of CPU in write system calls (%s)", human.Percent(share), name),
		Evidence:    []rules.Fact{rules.Share("unbuffered write system calls, share of CPU", share)},
		Fix:         fix,
		Example:     example,
		Caveats:     []string{caveat},
		Locations:   rules.Locations(sites, "code writing field by field"),
	}
	var frames []evidence.Matcher
	for _, k := range kinds {
		kindName := "application code writing from three or more lines"
		if k >= 0 {
			kindName = writers[k].name
			frames = append(frames, writers[k].frames)
		}
		f.Evidence = append(f.Evidence, rules.Share("via "+kindName, float64(byKind[k])/float64(cpu.Total)))
	}
	f.Frames = cpu.Matched(evidence.Any(frames...), 12)
	var appFuncs []string
	for fn, lines := range appLines {
		if len(lines) >= minAppLines {
			appFuncs = append(appFuncs, fn)
		}
	}
	sort.Strings(appFuncs)
	f.Frames = append(f.Frames, appFuncs...)
	if len(sites) > 0 {
		f.Summary += ", from " + rules.ShortFunc(sites[0].Func)
	}
	f.Claim = &rules.Claim{Level: rules.LevelCode, CPU: func(s evidence.Sample) bool { k, _ := classify(s); return k != -1 }, Regrade: rules.SeverityFor}
	pass.Report(f)
	return nil
}
