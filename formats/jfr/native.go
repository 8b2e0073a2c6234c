package jfr

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode/utf16"
)

// The native reader decodes the JFR binary format itself, so no JDK is
// needed and a recording is read in a fraction of the time `jfr print
// --json` takes. A recording is a sequence of chunks; each starts with a
// header, holds a metadata event describing every event type's fields, and
// constant pools (checkpoint events) that events refer to by key. One chunk
// is in memory at a time, so memory follows the largest chunk (the JDK
// rotates them at 12 MB by default), not the recording.
//
// It decodes only the event types Events lists, plus async-profiler's
// wall-clock samples; the rest are skipped by their size.

// chunkHeaderSize is the fixed header of a chunk.
const chunkHeaderSize = 68

// maxChunk bounds one chunk, which is read whole.
const maxChunk = 1 << 30

// ErrTruncated marks a recording that ends inside a chunk: the chunks
// before it were read.
var ErrTruncated = errors.New("recording cut short")

// ReadFile decodes the recording at path natively.
func ReadFile(path string) (*Recording, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	rec, err := Read(f)
	if err != nil {
		return rec, fmt.Errorf("%s: %w", path, err)
	}
	return rec, nil
}

// Read decodes a recording from r, chunk by chunk. A recording cut short
// or damaged after some events returns what was read before, with Partial
// saying where and why, and no error; one with nothing readable is an
// error.
func Read(r io.Reader) (*Recording, error) { return read(r, nil) }

// readInto decodes the given event types of a recording (and
// async-profiler's wall-clock samples) into c.
func readInto(c *converter, r io.Reader, types []string) (*Recording, error) {
	want := map[string]bool{wallClockEvent: true}
	for _, e := range types {
		want[e] = true
	}
	chunks, events := 0, 0
	var partial string
	var meta metadataCache
	head := make([]byte, chunkHeaderSize)
	for {
		n, err := io.ReadFull(r, head)
		if err == io.EOF {
			break
		}
		if err != nil {
			partial = fmt.Sprintf("chunk %d header cut short after %d bytes", chunks+1, n)
			break
		}
		h, err := parseChunkHeader(head)
		if err != nil && chunks > 0 {
			// A chunk still being written (a recording copied while the
			// JVM records) has no final header yet: keep those before it.
			partial = fmt.Sprintf("chunk %d: %v", chunks+1, err)
			break
		}
		if err != nil {
			return nil, fmt.Errorf("chunk %d: %w", chunks+1, err)
		}
		// The buffer grows with the data read, so a header claiming a
		// huge chunk costs nothing until the bytes are there.
		var body bytes.Buffer
		body.Grow(int(min(h.size, 64<<20)))
		body.Write(head)
		if n, err := io.CopyN(&body, r, h.size-chunkHeaderSize); err != nil {
			partial = fmt.Sprintf("chunk %d cut short: %d of %d bytes", chunks+1, chunkHeaderSize+n, h.size)
			break
		}
		cr := &chunkReader{h: h, buf: body.Bytes(), compressed: h.features&1 != 0, meta: &meta}
		err = cr.read(want, func(ev *event) error {
			if events++; events > maxEvents {
				return fmt.Errorf("more than %d events", maxEvents)
			}
			c.add(ev)
			return nil
		})
		if err != nil && events > 0 && events <= maxEvents {
			// The events before the damage are the program's behaviour.
			partial = fmt.Sprintf("chunk %d unreadable after %d events: %v", chunks+1, events, err)
			chunks++
			break
		}
		if err != nil {
			return nil, fmt.Errorf("chunk %d: %w", chunks+1, err)
		}
		chunks++
	}
	if chunks == 0 {
		if partial != "" {
			return nil, fmt.Errorf("%w: %s", ErrTruncated, partial)
		}
		return nil, errors.New("not a JFR recording: empty")
	}
	rec := c.finish()
	rec.Partial = partial
	if events == 0 && rec.Wall == nil {
		return nil, errors.New("the recording holds none of the events perfdoctor reads")
	}
	return rec, nil
}

type chunkHeader struct {
	major, minor   uint16
	size           int64
	cpOffset       int64
	metaOffset     int64
	startNanos     int64
	durationNanos  int64
	startTicks     int64
	ticksPerSecond int64
	features       int32
}

func parseChunkHeader(b []byte) (chunkHeader, error) {
	if !IsRecording(b) {
		return chunkHeader{}, errors.New("no FLR magic at the chunk's start")
	}
	be := binary.BigEndian
	h := chunkHeader{
		major: be.Uint16(b[4:]), minor: be.Uint16(b[6:]),
		size: int64(be.Uint64(b[8:])), cpOffset: int64(be.Uint64(b[16:])), metaOffset: int64(be.Uint64(b[24:])),
		startNanos: int64(be.Uint64(b[32:])), durationNanos: int64(be.Uint64(b[40:])),
		startTicks: int64(be.Uint64(b[48:])), ticksPerSecond: int64(be.Uint64(b[56:])),
		features: int32(be.Uint32(b[64:])),
	}
	switch {
	case h.major != 2 && h.major != 1:
		return h, fmt.Errorf("format version %d.%d is not read (JDK 11 and later write 2.x)", h.major, h.minor)
	case h.size < chunkHeaderSize || h.size > maxChunk:
		return h, fmt.Errorf("chunk size %d out of range", h.size)
	case h.metaOffset < chunkHeaderSize || h.metaOffset >= h.size, h.cpOffset < 0 || h.cpOffset >= h.size:
		return h, errors.New("metadata or constant pool offset outside the chunk")
	case h.ticksPerSecond <= 0:
		return h, errors.New("no tick frequency")
	}
	return h, nil
}

// Type descriptions from the metadata event.
type (
	typeDesc struct {
		id        int64
		name      string
		simple    bool // a wrapper of one value, printed as that value
		primitive bool
		fields    []fieldDesc
	}
	fieldDesc struct {
		name   string
		typeID int64
		t      *typeDesc
		pooled bool
		array  bool
		unit   unit
	}
	// unit is a field's time annotation.
	unit int8
)

const (
	unitNone unit = iota
	unitTicksStamp
	unitTicksSpan
	unitNanosSpan
	unitMillisSpan
	unitEpochMillis
	unitEpochNanos
)

// Decoded values: int64, float64, bool, string, *object, []any, poolRef, nil.
type (
	object struct {
		t *typeDesc
		v []any
	}
	poolRef struct {
		typeID, key int64
	}
)

// chunkReader decodes one chunk held whole in buf.
type chunkReader struct {
	h          chunkHeader
	buf        []byte
	pos        int
	compressed bool
	err        error
	types      map[int64]*typeDesc
	byName     map[string]*typeDesc
	pools      map[int64]*pool
	stackCache map[int64]*stackTrace
	threads    map[int64]*thread
	methods    map[int64]*methodInfo // by the method pool's key
	classes    map[int64]*class      // by the class pool's key
	frameTypes map[int64]string      // by the frame type pool's key
	frameNames map[[2]int64]string   // builder names by method and frame type keys
	depth      int
	meta       *metadataCache
}

// metadataCache keeps the last chunk's type descriptions: the chunks of a
// recording usually repeat the same metadata, which is then decoded once.
type metadataCache struct {
	raw    []byte
	types  map[int64]*typeDesc
	byName map[string]*typeDesc
}

var errShort = errors.New("data ends inside a value")

func (r *chunkReader) fail(err error) {
	if r.err == nil {
		r.err = err
	}
}

func (r *chunkReader) byte() byte {
	if r.pos >= len(r.buf) {
		r.fail(errShort)
		return 0
	}
	b := r.buf[r.pos]
	r.pos++
	return b
}

// varint reads JFR's compressed integer: 7 bits a byte, least significant
// group first, the ninth byte holding a full 8 bits.
func (r *chunkReader) varint() int64 {
	if !r.compressed {
		return r.fixed(8)
	}
	var v uint64
	for i := 0; i < 9; i++ {
		b := r.byte()
		if i == 8 {
			v |= uint64(b) << 56
			break
		}
		v |= uint64(b&0x7f) << (7 * i)
		if b&0x80 == 0 {
			break
		}
	}
	return int64(v)
}

func (r *chunkReader) fixed(n int) int64 {
	if r.pos+n > len(r.buf) {
		r.fail(errShort)
		r.pos = len(r.buf)
		return 0
	}
	var v uint64
	for _, b := range r.buf[r.pos : r.pos+n] {
		v = v<<8 | uint64(b)
	}
	r.pos += n
	return int64(v)
}

func (r *chunkReader) int() int64 {
	if !r.compressed {
		return int64(int32(r.fixed(4)))
	}
	return r.varint()
}

// length reads a count and checks that the data could hold it, so a
// corrupt count cannot make a huge allocation.
func (r *chunkReader) length() int {
	n := r.int()
	if n < 0 || n > int64(len(r.buf)-r.pos) {
		r.fail(fmt.Errorf("count %d larger than the data left", n))
		return 0
	}
	return int(n)
}

func (r *chunkReader) string() any {
	switch enc := r.byte(); enc {
	case 0, 1:
		return ""
	case 2:
		return poolRef{typeID: r.stringTypeID(), key: r.varint()}
	case 3, 5:
		n := r.length()
		s := r.buf[r.pos : r.pos+n]
		r.pos += n
		if enc == 5 { // Latin-1
			rs := make([]rune, n)
			for i, b := range s {
				rs[i] = rune(b)
			}
			return string(rs)
		}
		return string(s)
	case 4:
		n := r.length()
		u := make([]uint16, n)
		for i := range u {
			u[i] = uint16(r.varint())
		}
		return string(utf16.Decode(u))
	default:
		r.fail(fmt.Errorf("unknown string encoding %d", enc))
		return ""
	}
}

func (r *chunkReader) stringTypeID() int64 {
	if t := r.byName["java.lang.String"]; t != nil {
		return t.id
	}
	return -1
}

// read decodes the chunk: metadata, constant pools, then each wanted event.
func (r *chunkReader) read(want map[string]bool, emit func(*event) error) error {
	if err := r.readMetadata(); err != nil {
		return fmt.Errorf("metadata: %w", err)
	}
	if err := r.readPools(); err != nil {
		return fmt.Errorf("constant pools: %w", err)
	}
	r.stackCache = map[int64]*stackTrace{}
	r.threads = map[int64]*thread{}
	r.methods = map[int64]*methodInfo{}
	r.classes = map[int64]*class{}
	r.frameTypes = map[int64]string{}
	r.frameNames = map[[2]int64]string{}
	for pos := chunkHeaderSize; pos < int(r.h.size); {
		r.pos = pos
		size := r.int()
		if r.err != nil || size <= 0 || pos+int(size) > len(r.buf) {
			return fmt.Errorf("event at offset %d: bad size %d", pos, size)
		}
		end := pos + int(size)
		typeID := r.varint()
		if t := r.types[typeID]; t != nil && want[t.name] {
			ev := r.event(t)
			if r.err != nil {
				return fmt.Errorf("event %s at offset %d: %w", t.name, pos, r.err)
			}
			if err := emit(ev); err != nil {
				return err
			}
		}
		pos = end
	}
	return nil
}

func (r *chunkReader) readMetadata() error {
	r.pos = int(r.h.metaOffset)
	size := r.int()
	// The size counts the event's own size field, so the event may end
	// exactly at the chunk's end (as jfr scrub writes it).
	if size <= 0 || r.h.metaOffset+size > int64(len(r.buf)) {
		return fmt.Errorf("metadata size %d out of the chunk", size)
	}
	raw := r.buf[int(r.h.metaOffset) : int(r.h.metaOffset)+int(size)]
	if c := r.meta; c != nil && c.types != nil && string(c.raw) == string(raw) {
		r.types, r.byName = c.types, c.byName
		return nil
	}
	if t := r.varint(); t != 0 {
		return fmt.Errorf("event type %d where metadata (0) was expected", t)
	}
	r.varint() // start
	r.varint() // duration
	r.varint() // metadata id
	n := r.length()
	strs := make([]string, n)
	for i := range strs {
		s, _ := r.string().(string)
		strs[i] = s
	}
	if r.err != nil {
		return r.err
	}
	root := r.element(strs, 0)
	if r.err != nil {
		return r.err
	}
	r.types = map[int64]*typeDesc{}
	r.byName = map[string]*typeDesc{}
	type pending struct {
		f     *fieldDesc
		annos []element
	}
	var fields []pending
	for _, md := range root.children {
		if md.name != "metadata" {
			continue
		}
		for _, cl := range md.children {
			if cl.name != "class" {
				continue
			}
			id, _ := strconv.ParseInt(cl.attr["id"], 10, 64)
			t := &typeDesc{id: id, name: cl.attr["name"], simple: cl.attr["simpleType"] == "true"}
			t.primitive = cl.attr["superType"] == "" && isPrimitive(t.name)
			for _, fe := range cl.children {
				if fe.name != "field" {
					continue
				}
				tid, _ := strconv.ParseInt(fe.attr["class"], 10, 64)
				t.fields = append(t.fields, fieldDesc{name: fe.attr["name"], typeID: tid,
					pooled: fe.attr["constantPool"] == "true", array: fe.attr["dimension"] == "1"})
			}
			for i, fe := range filterElements(cl.children, "field") {
				fields = append(fields, pending{&t.fields[i], fe.children})
			}
			r.types[id] = t
			r.byName[t.name] = t
		}
	}
	for _, p := range fields {
		p.f.t = r.types[p.f.typeID]
		if p.f.t == nil {
			return fmt.Errorf("field %s of unknown type %d", p.f.name, p.f.typeID)
		}
		for _, a := range p.annos {
			if a.name != "annotation" {
				continue
			}
			aid, _ := strconv.ParseInt(a.attr["class"], 10, 64)
			at := r.types[aid]
			if at == nil {
				continue
			}
			switch v := a.attr["value"]; at.name {
			case "jdk.jfr.Timestamp":
				switch v {
				case "TICKS":
					p.f.unit = unitTicksStamp
				case "NANOSECONDS_SINCE_EPOCH":
					p.f.unit = unitEpochNanos
				default:
					p.f.unit = unitEpochMillis
				}
			case "jdk.jfr.Timespan":
				switch v {
				case "TICKS":
					p.f.unit = unitTicksSpan
				case "MILLISECONDS":
					p.f.unit = unitMillisSpan
				default:
					p.f.unit = unitNanosSpan
				}
			}
		}
	}
	if r.meta != nil {
		*r.meta = metadataCache{raw: append([]byte(nil), raw...), types: r.types, byName: r.byName}
	}
	return nil
}

func filterElements(es []element, name string) []element {
	var out []element
	for _, e := range es {
		if e.name == name {
			out = append(out, e)
		}
	}
	return out
}

func isPrimitive(name string) bool {
	switch name {
	case "boolean", "byte", "char", "short", "int", "long", "float", "double", "java.lang.String":
		return true
	}
	return false
}

type element struct {
	name     string
	attr     map[string]string
	children []element
}

func (r *chunkReader) element(strs []string, depth int) element {
	if depth > 32 {
		r.fail(errors.New("metadata nested too deep"))
		return element{}
	}
	str := func() string {
		i := r.int()
		if i < 0 || i >= int64(len(strs)) {
			r.fail(fmt.Errorf("string index %d out of range", i))
			return ""
		}
		return strs[i]
	}
	e := element{name: str(), attr: map[string]string{}}
	for n := r.length(); n > 0 && r.err == nil; n-- {
		k := str()
		e.attr[k] = str()
	}
	for n := r.length(); n > 0 && r.err == nil; n-- {
		e.children = append(e.children, r.element(strs, depth+1))
	}
	return e
}

// pool is one type's constant pool in a chunk. Entries are decoded when
// first resolved, not when the pool is read: a recording's pools hold every
// stack trace, method and class, and a decoded entry costs far more than
// its offset.
type pool struct {
	t       *typeDesc
	at      map[int64]int // each entry's value, by key: its offset in the chunk
	decoded map[int64]any
}

// readPools follows the chain of checkpoint events from the header's
// offset, each pointing at the one before it, and notes where each entry
// is (skipping over it checks that it is whole).
func (r *chunkReader) readPools() error {
	r.pools = map[int64]*pool{}
	offset := r.h.cpOffset
	for i := 0; offset > 0; i++ {
		if i > 1<<20 || offset >= r.h.size {
			return errors.New("constant pool chain out of the chunk")
		}
		r.pos = int(offset)
		r.int() // size
		if t := r.varint(); t != 1 {
			return fmt.Errorf("event type %d where a checkpoint (1) was expected", t)
		}
		r.varint() // start
		r.varint() // duration
		delta := r.varint()
		r.byte() // checkpoint kind (flush, or type mask)
		for pools := r.length(); pools > 0 && r.err == nil; pools-- {
			tid := r.varint()
			t := r.types[tid]
			if t == nil {
				return fmt.Errorf("pool of unknown type %d", tid)
			}
			p := r.pools[tid]
			if p == nil {
				p = &pool{t: t, at: map[int64]int{}, decoded: map[int64]any{}}
				r.pools[tid] = p
			}
			for n := r.length(); n > 0 && r.err == nil; n-- {
				key := r.varint()
				p.at[key] = r.pos
				r.skip(t, false, 0)
			}
		}
		if r.err != nil {
			return r.err
		}
		if delta == 0 {
			break
		}
		offset += delta
	}
	return nil
}

// skip moves past a value as value would read it, without keeping it.
func (r *chunkReader) skip(t *typeDesc, pooled bool, depth int) {
	if pooled {
		r.varint()
		return
	}
	switch t.name {
	case "boolean", "byte":
		r.byte()
		return
	case "char", "short", "int", "long":
		r.varint()
		return
	case "float":
		r.fixed(4)
		return
	case "double":
		r.fixed(8)
		return
	case "java.lang.String":
		r.skipString()
		return
	}
	if depth > 64 {
		r.fail(errors.New("values nested too deep"))
		return
	}
	for i := range t.fields {
		f := &t.fields[i]
		if !f.array {
			r.skip(f.t, f.pooled, depth+1)
		} else if n := r.length(); f.pooled || f.t.primitive || len(f.t.fields) > 0 {
			// (Elements of a type without fields take no bytes.)
			for ; n > 0 && r.err == nil; n-- {
				r.skip(f.t, f.pooled, depth+1)
			}
		}
		if r.err != nil {
			return
		}
	}
}

func (r *chunkReader) skipString() {
	switch enc := r.byte(); enc {
	case 0, 1:
	case 2:
		r.varint()
	case 3, 5:
		r.pos += r.length()
	case 4:
		for n := r.length(); n > 0 && r.err == nil; n-- {
			r.varint()
		}
	default:
		r.fail(fmt.Errorf("unknown string encoding %d", enc))
	}
}

// poolValue decodes a pool's entry, once.
func (r *chunkReader) poolValue(ref poolRef) any {
	p := r.pools[ref.typeID]
	if p == nil {
		return nil
	}
	if v, ok := p.decoded[ref.key]; ok {
		return v
	}
	off, ok := p.at[ref.key]
	if !ok {
		return nil
	}
	save := r.pos
	r.pos = off
	v := r.value(p.t, false)
	r.pos = save
	p.decoded[ref.key] = v
	return v
}

// object reads the fields of a type written inline.
func (r *chunkReader) object(t *typeDesc) *object {
	r.depth++
	defer func() { r.depth-- }()
	if r.depth > 64 {
		r.fail(errors.New("values nested too deep"))
		return &object{t: t}
	}
	o := &object{t: t, v: make([]any, len(t.fields))}
	for i := range t.fields {
		f := &t.fields[i]
		if f.array {
			n := r.length()
			arr := make([]any, 0, n)
			for ; n > 0 && r.err == nil; n-- {
				arr = append(arr, r.value(f.t, f.pooled))
			}
			o.v[i] = arr
			continue
		}
		o.v[i] = r.value(f.t, f.pooled)
		if r.err != nil {
			break
		}
	}
	return o
}

func (r *chunkReader) value(t *typeDesc, pooled bool) any {
	if pooled {
		return poolRef{typeID: t.id, key: r.varint()}
	}
	switch t.name {
	case "boolean":
		return r.byte() != 0
	case "byte":
		return int64(int8(r.byte()))
	case "char":
		return int64(uint16(r.varint()))
	case "short":
		return int64(int16(r.varint()))
	case "int":
		return int64(int32(r.varint()))
	case "long":
		return r.varint()
	case "float":
		// As its shortest decimal, as the JDK prints it: 0.11428218, not
		// float64's 0.11428217962384224.
		f, _ := strconv.ParseFloat(strconv.FormatFloat(float64(math.Float32frombits(uint32(r.fixed(4)))), 'g', -1, 32), 64)
		return f
	case "double":
		return math.Float64frombits(uint64(r.fixed(8)))
	case "java.lang.String":
		return r.string()
	}
	return r.object(t)
}

// resolve follows constant pool references.
func (r *chunkReader) resolve(v any) any {
	for i := 0; i < 8; i++ {
		ref, ok := v.(poolRef)
		if !ok {
			return v
		}
		v = r.poolValue(ref)
	}
	return nil
}

// field returns the named field of an object, resolved.
func (r *chunkReader) field(v any, name string) any {
	o, _ := r.resolve(v).(*object)
	if o == nil {
		return nil
	}
	for i, f := range o.t.fields {
		if f.name == name {
			return r.resolve(o.v[i])
		}
	}
	return nil
}

// unwrap follows simple types (one-field wrappers such as GCName or
// Symbol) to their value, a bounded number of times: a corrupt pool can
// make a wrapper refer to itself.
func (r *chunkReader) unwrap(v any) any {
	for i := 0; i < 8; i++ {
		o, ok := r.resolve(v).(*object)
		if !ok {
			return r.resolve(v)
		}
		if len(o.v) == 0 || !(o.t.simple || len(o.v) == 1) {
			return o
		}
		v = o.v[0]
	}
	return nil
}

// text renders a value as a string: simple types by their one value.
func (r *chunkReader) text(v any) string {
	switch v := r.unwrap(v).(type) {
	case string:
		return v
	case int64:
		return strconv.FormatInt(v, 10)
	}
	return ""
}

func (r *chunkReader) num(v any) int64 {
	switch v := r.unwrap(v).(type) {
	case int64:
		return v
	case float64:
		return int64(v)
	}
	return 0
}

func (r *chunkReader) float(v any) float64 {
	switch v := r.resolve(v).(type) {
	case float64:
		return v
	case int64:
		return float64(v)
	}
	return 0
}

// ticksToNanos converts as the JDK's reader does (ticks over ticks per
// nanosecond, truncated), so both readers agree to the nanosecond.
func (r *chunkReader) ticksToNanos(t int64) int64 {
	return int64(float64(t) / (float64(r.h.ticksPerSecond) / 1e9))
}

func (r *chunkReader) timestamp(f *fieldDesc, v any) time.Time { return r.timestampOf(f, r.num(v)) }

func (r *chunkReader) timestampOf(f *fieldDesc, n int64) time.Time {
	switch f.unit {
	case unitTicksStamp:
		return time.Unix(0, r.h.startNanos+r.ticksToNanos(n-r.h.startTicks)).UTC()
	case unitEpochNanos:
		return time.Unix(0, n).UTC()
	}
	return time.UnixMilli(n).UTC()
}

func (r *chunkReader) timespan(f *fieldDesc, v any) time.Duration { return r.timespanOf(f, r.num(v)) }

func (r *chunkReader) timespanOf(f *fieldDesc, n int64) time.Duration {
	if n == math.MinInt64 || n == math.MaxInt64 {
		return time.Duration(n)
	}
	switch f.unit {
	case unitTicksSpan:
		return time.Duration(r.ticksToNanos(n))
	case unitMillisSpan:
		return time.Duration(n) * time.Millisecond
	}
	return time.Duration(n)
}

func (r *chunkReader) class(v any) *class {
	if ref, ok := v.(poolRef); ok {
		return r.classRef(ref)
	}
	if v = r.resolve(v); v == nil {
		return nil
	}
	return &class{Name: r.text(r.field(v, "name"))}
}

// classRef resolves a pooled class, once per key.
func (r *chunkReader) classRef(ref poolRef) *class {
	if c, ok := r.classes[ref.key]; ok {
		return c
	}
	var c *class
	if o := r.poolValue(ref); o != nil {
		c = &class{Name: r.text(r.field(o, "name"))}
	}
	r.classes[ref.key] = c
	return c
}

func (r *chunkReader) thread(v any) *thread {
	if ref, ok := v.(poolRef); ok {
		return r.threadRef(ref)
	}
	if o := r.resolve(v); o != nil {
		return &thread{JavaName: r.text(r.field(o, "javaName")), OSName: r.text(r.field(o, "osName"))}
	}
	return nil
}

// threadRef resolves a pooled thread, once per key.
func (r *chunkReader) threadRef(ref poolRef) *thread {
	if t, ok := r.threads[ref.key]; ok {
		return t
	}
	var t *thread
	if o := r.poolValue(ref); o != nil {
		t = &thread{JavaName: r.text(r.field(o, "javaName")), OSName: r.text(r.field(o, "osName"))}
	}
	r.threads[ref.key] = t
	return t
}

// methodInfo is a pooled method as frames need it.
type methodInfo struct {
	class            class
	name, descriptor string
}

// method resolves a pooled method, once per key.
func (r *chunkReader) method(ref poolRef) *methodInfo {
	if m, ok := r.methods[ref.key]; ok {
		return m
	}
	m := &methodInfo{name: r.text(r.field(ref, "name")), descriptor: r.text(r.field(ref, "descriptor"))}
	if c := r.class(r.field(ref, "type")); c != nil {
		m.class = *c
	}
	r.methods[ref.key] = m
	return m
}

// stackAt decodes a pooled stack trace at off straight into frames: the
// frames' methods and types are pooled, and resolved once per key, so a
// stack costs its frames and nothing per value. Fields of an unexpected
// shape are read the general way.
func (r *chunkReader) stackAt(t *typeDesc, off int) *stackTrace {
	save := r.pos
	defer func() { r.pos = save }()
	r.pos = off
	st := &stackTrace{}
	for i := range t.fields {
		f := &t.fields[i]
		switch {
		case f.name == "truncated" && !f.pooled && !f.array && f.t.name == "boolean":
			st.Truncated = r.byte() != 0
		case f.name == "frames" && f.array && !f.pooled && !f.t.primitive:
			n := r.length()
			st.Frames = make([]frame, 0, n)
			for ; n > 0 && r.err == nil; n-- {
				st.Frames = append(st.Frames, r.frameOf(f.t))
			}
		default:
			if f.array {
				for n := r.length(); n > 0 && r.err == nil; n-- {
					r.skip(f.t, f.pooled, 1)
				}
			} else {
				r.skip(f.t, f.pooled, 1)
			}
		}
		if r.err != nil {
			return nil
		}
	}
	return st
}

// frameOf decodes one frame written inline.
func (r *chunkReader) frameOf(t *typeDesc) frame {
	var fr frame
	var methodKey, typeKey int64 = -1, -1
	for i := range t.fields {
		f := &t.fields[i]
		switch {
		case f.array:
			for n := r.length(); n > 0 && r.err == nil; n-- {
				r.skip(f.t, f.pooled, 1)
			}
		case f.name == "method" && f.pooled:
			methodKey = r.varint()
			m := r.method(poolRef{typeID: f.t.id, key: methodKey})
			fr.Method.Type, fr.Method.Name, fr.Method.Descriptor = m.class, m.name, m.descriptor
		case f.name == "method":
			m := r.value(f.t, false)
			fr.Method.Name = r.text(r.field(m, "name"))
			fr.Method.Descriptor = r.text(r.field(m, "descriptor"))
			if c := r.class(r.field(m, "type")); c != nil {
				fr.Method.Type = *c
			}
		case f.name == "lineNumber":
			fr.LineNumber = r.num(r.value(f.t, f.pooled))
		case f.name == "type" && f.pooled:
			typeKey = r.varint()
			name, ok := r.frameTypes[typeKey]
			if !ok {
				name = r.text(poolRef{typeID: f.t.id, key: typeKey})
				r.frameTypes[typeKey] = name
			}
			fr.Type = name
		case f.name == "type":
			fr.Type = r.text(r.value(f.t, false))
		default:
			r.skip(f.t, f.pooled, 1)
		}
	}
	if methodKey >= 0 && typeKey >= 0 {
		k := [2]int64{methodKey, typeKey}
		if fr.name = r.frameNames[k]; fr.name == "" {
			fr.name = builderName(&fr)
			r.frameNames[k] = fr.name
		}
	}
	return fr
}

// stackRef converts a pooled stack trace, once per key.
func (r *chunkReader) stackRef(ref poolRef) *stackTrace {
	if st, ok := r.stackCache[ref.key]; ok {
		return st
	}
	var st *stackTrace
	if p := r.pools[ref.typeID]; p != nil {
		if off, ok := p.at[ref.key]; ok {
			st = r.stackAt(p.t, off)
		}
	}
	r.stackCache[ref.key] = st
	return st
}

// stack converts a stack trace, pooled or written inline.
func (r *chunkReader) stack(v any) *stackTrace {
	if ref, ok := v.(poolRef); ok {
		return r.stackRef(ref)
	}
	o := r.resolve(v)
	if o == nil {
		return nil
	}
	st := &stackTrace{}
	if b, ok := r.field(o, "truncated").(bool); ok {
		st.Truncated = b
	}
	frames, _ := r.field(o, "frames").([]any)
	st.Frames = make([]frame, 0, len(frames))
	for _, fv := range frames {
		var fr frame
		m := r.field(fv, "method")
		fr.Method.Name = r.text(r.field(m, "name"))
		fr.Method.Descriptor = r.text(r.field(m, "descriptor"))
		if c := r.class(r.field(m, "type")); c != nil {
			fr.Method.Type = *c
		}
		fr.LineNumber = r.num(r.field(fv, "lineNumber"))
		fr.Type = r.text(r.field(fv, "type"))
		st.Frames = append(st.Frames, fr)
	}
	return st
}

// event decodes an event of type t at the reader's position straight into
// the fields the converter reads: the other fields are skipped, pooled
// values resolved (stacks, threads and classes once per key), and numbers
// read without boxing them.
func (r *chunkReader) event(t *typeDesc) *event {
	ev := &event{Type: t.name}
	v := &ev.Values
	for i := range t.fields {
		f := &t.fields[i]
		switch {
		case !eventFields[f.name] || f.array:
			r.skipField(f)
		case f.pooled:
			if ref := (poolRef{typeID: f.t.id, key: r.varint()}); !r.setRef(v, f, ref) {
				r.setField(v, f, ref)
			}
		case isInteger(f.t):
			if n := r.integer(f.t); !r.setNum(v, f, n) {
				r.setField(v, f, n)
			}
		default:
			r.setField(v, f, r.value(f.t, false))
		}
		if r.err != nil {
			break
		}
	}
	return ev
}

// skipField moves past a field's value, or values.
func (r *chunkReader) skipField(f *fieldDesc) {
	if !f.array {
		r.skip(f.t, f.pooled, 0)
		return
	}
	for n := r.length(); n > 0 && r.err == nil; n-- {
		r.skip(f.t, f.pooled, 0)
	}
}

// isInteger tells the integer types value reads as varints.
func isInteger(t *typeDesc) bool {
	switch t.name {
	case "char", "short", "int", "long":
		return true
	}
	return false
}

// integer reads an integer as value does.
func (r *chunkReader) integer(t *typeDesc) int64 {
	n := r.varint()
	switch t.name {
	case "char":
		return int64(uint16(n))
	case "short":
		return int64(int16(n))
	case "int":
		return int64(int32(n))
	}
	return n
}

// setRef sets the fields most events carry from a pool's key without
// boxing it; false for any other field.
func (r *chunkReader) setRef(v *values, f *fieldDesc, ref poolRef) bool {
	switch f.name {
	case "stackTrace":
		v.StackTrace = r.stackRef(ref)
	case "sampledThread":
		v.SampledThread = r.threadRef(ref)
	case "eventThread":
		v.EventThread = r.threadRef(ref)
	case "state":
		v.State = r.text(r.poolValue(ref))
	case "objectClass":
		v.ObjectClass = r.classRef(ref)
	case "monitorClass":
		v.MonitorClass = r.classRef(ref)
	default:
		return false
	}
	return true
}

// setNum sets the numeric fields most events carry; false for others.
func (r *chunkReader) setNum(v *values, f *fieldDesc, n int64) bool {
	switch f.name {
	case "startTime":
		v.StartTime = r.timestampOf(f, n)
	case "duration":
		v.Duration = jsonDur(r.timespanOf(f, n))
	case "weight":
		v.Weight = n
	case "allocationSize":
		v.AllocationSize = n
	case "tlabSize":
		v.TLABSize = n
	case "samples":
		v.Samples = n
	default:
		return false
	}
	return true
}

// setField sets the field f of an event from its decoded value.
func (r *chunkReader) setField(v *values, f *fieldDesc, raw any) {
	{
		switch f.name {
		case "startTime":
			v.StartTime = r.timestamp(f, raw)
		case "duration":
			v.Duration = jsonDur(r.timespan(f, raw))
		case "sumOfPauses":
			v.SumOfPauses = jsonDur(r.timespan(f, raw))
		case "longestPause":
			v.LongestPause = jsonDur(r.timespan(f, raw))
		case "stackTrace":
			v.StackTrace = r.stack(raw)
		case "sampledThread":
			v.SampledThread = r.thread(raw)
		case "eventThread":
			v.EventThread = r.thread(raw)
		case "weight":
			v.Weight = r.num(raw)
		case "allocationSize":
			v.AllocationSize = r.num(raw)
		case "tlabSize":
			v.TLABSize = r.num(raw)
		case "throwables":
			v.Throwables = r.num(raw)
		case "samples":
			v.Samples = r.num(raw)
		case "failed":
			v.Failed, _ = r.resolve(raw).(bool)
		case "samplingPeriod":
			v.SamplingPeriod = jsonDur(r.timespan(f, raw))
		case "lostSamples":
			v.LostSamples = r.num(raw)
		case "objectClass":
			v.ObjectClass = r.class(raw)
		case "monitorClass":
			v.MonitorClass = r.class(raw)
		case "thrownClass":
			v.ThrownClass = r.class(raw)
		case "name":
			v.Name = r.text(raw)
		case "cause":
			v.Cause = r.text(raw)
		case "state":
			v.State = r.text(raw)
		case "youngCollector":
			v.YoungCollector = r.text(raw)
		case "oldCollector":
			v.OldCollector = r.text(raw)
		case "parallelGCThreads":
			v.ParallelGCThreads = int(r.num(raw))
		case "concurrentGCThreads":
			v.ConcurrentGCThreads = int(r.num(raw))
		case "isExplicitGCDisabled":
			v.IsExplicitGCDisabled, _ = r.resolve(raw).(bool)
		case "jvmName":
			v.JVMName = r.text(raw)
		case "jvmVersion":
			v.JVMVersion = r.text(raw)
		case "jvmArguments":
			v.JVMArguments = r.text(raw)
		case "jvmFlags":
			v.JVMFlags = r.text(raw)
		case "javaArguments":
			v.JavaArguments = r.text(raw)
		case "pid":
			v.PID = int(r.num(raw))
		case "key":
			v.Key = r.text(raw)
		case "value":
			v.Value = r.rawJSON(raw)
		case "origin":
			v.Origin = r.text(raw)
		case "user":
			v.User = r.float(raw)
		case "system":
			v.System = r.float(raw)
		case "jvmUser":
			v.JVMUser = r.float(raw)
		case "jvmSystem":
			v.JVMSystem = r.float(raw)
		case "machineTotal":
			v.MachineTotal = r.float(raw)
		case "cores":
			v.Cores = int(r.num(raw))
		case "hwThreads":
			v.HWThreads = int(r.num(raw))
		case "result":
			v.Result = r.text(raw)
		case "blockingOperation":
			v.BlockingOperation = r.text(raw)
		case "pinnedReason":
			v.PinnedReason = r.text(raw)
		case "parkedClass":
			v.ParkedClass = r.class(raw)
		case "activeCount":
			v.ActiveCount = r.num(raw)
		case "peakCount":
			v.PeakCount = r.num(raw)
		case "switchRate":
			v.SwitchRate = r.float(raw)
		case "safepointId":
			v.SafepointID = r.num(raw)
		case "operation":
			v.Operation = r.text(raw)
		case "safepoint":
			v.Safepoint, _ = r.resolve(raw).(bool)
		case "caller":
			v.Caller = r.thread(raw)
		case "codeBlobType":
			v.CodeBlobType = r.text(raw)
		case "startAddress":
			v.StartAddress = r.num(raw)
		case "reservedTopAddress":
			v.ReservedTopAddress = r.num(raw)
		case "entryCount":
			v.EntryCount = r.num(raw)
		case "unallocatedCapacity":
			v.UnallocatedCapacity = r.num(raw)
		case "fullCount":
			v.FullCount = r.num(raw)
		case "userTime":
			v.UserTime = jsonDur(r.timespan(f, raw))
		case "systemTime":
			v.SystemTime = jsonDur(r.timespan(f, raw))
		}
	}
}

// eventFields are the event fields setField reads; an event's other
// fields are skipped without decoding them.
var eventFields = map[string]bool{}

func init() {
	for _, name := range []string{
		"startTime", "duration", "sumOfPauses", "longestPause", "stackTrace", "sampledThread",
		"eventThread", "weight", "allocationSize", "tlabSize", "throwables", "samples", "failed",
		"samplingPeriod", "lostSamples", "objectClass", "monitorClass", "thrownClass", "name", "cause",
		"state", "youngCollector", "oldCollector", "parallelGCThreads", "concurrentGCThreads",
		"isExplicitGCDisabled", "jvmName", "jvmVersion", "jvmArguments", "jvmFlags", "javaArguments",
		"pid", "key", "value", "origin", "user", "system", "jvmUser", "jvmSystem", "machineTotal",
		"cores", "hwThreads", "result", "blockingOperation", "pinnedReason", "parkedClass",
		"activeCount", "peakCount", "switchRate", "safepointId", "operation", "safepoint", "caller",
		"codeBlobType", "startAddress", "reservedTopAddress", "entryCount", "unallocatedCapacity",
		"fullCount", "userTime", "systemTime",
	} {
		eventFields[name] = true
	}
}

// rawJSON renders a flag's or property's value as jfr print --json does.
func (r *chunkReader) rawJSON(v any) json.RawMessage {
	var out any
	switch v := r.resolve(v).(type) {
	case bool, int64:
		out = v
	case float64:
		if math.IsInf(v, 0) || math.IsNaN(v) {
			out = strconv.FormatFloat(v, 'g', -1, 64)
		} else {
			out = v
		}
	default:
		out = r.text(v)
	}
	b, _ := json.Marshal(out)
	return b
}

// isNativeFrame tells a frame of native code (async-profiler names the
// library as the frame's class: "libc.so.6", "libjvm.so", "vdso") from a
// Java frame, including a Java native method ("java/lang/Thread.sleep0").
// async-profiler gives its native frames a descriptor no Java method can
// have: "()L;", and "(Lk;)L;" in the kernel.
func isNativeFrame(f *frame) bool {
	switch f.Type {
	case "C++", "Kernel":
		return true
	case "Native":
		cls := f.Method.Type.Name
		return cls == "" || strings.Contains(cls, ".so") || strings.HasPrefix(cls, "[") || isProfilerDescriptor(f.Method.Descriptor)
	}
	return false
}

func isProfilerDescriptor(d string) bool { return d == "()L;" || d == "(Lk;)L;" }
