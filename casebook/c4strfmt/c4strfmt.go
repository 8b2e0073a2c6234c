// Package c4strfmt reproduces casebook case C4, string-formatting: a Kafka
// worker built cache keys and output lines with fmt.Sprintf and string
// concatenation on its hot path. The fix was a pre-grown strings.Builder,
// strconv.Append* and byte slices instead of strings.
//
// Each request decodes a batch of Batch ad events from the worker's fetch
// buffer (32 MB of raw fixed-size records, as consumed from Kafka); per event
// it builds a counter key, looks the key up in a table of counters, and
// renders a report line; the answer is the report's size. The fetch buffer
// holds no pointers: it costs the garbage collector nothing to mark, and it
// keeps the heap goal high enough that the bad variant's garbage does not
// make GC the larger cost (that is case C5, a different class).
//
//   - Bad: fmt.Sprintf for each key and each piece of a line, the pieces
//     joined with + and the lines with strings.Join.
//   - Fixed: keys built in a reused byte slice with strconv.Append* (the map
//     lookup m[string(b)] does not allocate), lines written to a strings.Builder
//     grown once to the batch's size.
//
// This is "any Go service": it imports nothing from perfdoctor.
package c4strfmt

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
)

// Variants.
const (
	Bad   = "bad"
	Fixed = "fixed"
)

// Batch is the number of events per request.
const Batch = 32

var (
	campaigns = []string{"spring-sale", "brand-lift", "retarget", "app-install", "video-q3", "holiday", "launch", "loyalty"}
	slots     = []string{"banner-300x250", "banner-728x90", "native-feed", "video-preroll", "interstitial"}
	countries = []string{"CN", "US", "DE", "JP", "BR", "IN", "FR", "GB"}
)

// Record layout in the fetch buffer: ts int64, user int64, price in micros
// uint32, day uint16, campaign, slot and country indexes: 27 bytes, padded.
const (
	recordSize = 32
	records    = 1 << 20 // 32 MB
)

var (
	fetchOnce sync.Once
	fetch     []byte
)

// fill writes the fetch buffer: users and days come from small ranges so
// that some keys hit the counter table.
func fill() {
	r := rand.New(rand.NewPCG(42, 7))
	fetch = make([]byte, records*recordSize)
	for i := range records {
		b := fetch[i*recordSize:]
		binary.LittleEndian.PutUint64(b[0:], uint64(1_700_000_000_000+r.Int64N(86_400_000)))
		binary.LittleEndian.PutUint64(b[8:], uint64(100_000+r.Int64N(512)))
		binary.LittleEndian.PutUint32(b[16:], uint32(r.IntN(3_000_000)))
		binary.LittleEndian.PutUint16(b[20:], uint16(20_000+r.IntN(2)))
		b[22] = byte(r.IntN(len(campaigns)))
		b[23] = byte(r.IntN(len(slots)))
		b[24] = byte(r.IntN(len(countries)))
	}
}

func decode(i int) event {
	b := fetch[i*recordSize : (i+1)*recordSize]
	return event{
		ts:       int64(binary.LittleEndian.Uint64(b[0:])),
		user:     int64(binary.LittleEndian.Uint64(b[8:])),
		price:    float64(binary.LittleEndian.Uint32(b[16:])) / 1e6,
		day:      int(binary.LittleEndian.Uint16(b[20:])),
		campaign: campaigns[b[22]],
		slot:     slots[b[23]],
		country:  countries[b[24]],
	}
}

type event struct {
	ts       int64
	user     int64
	campaign string
	slot     string
	country  string
	day      int
	price    float64
}

// Handler is the worker. Both variants share the counter table.
type Handler struct {
	variant  string
	counters map[string]int64
	scratch  sync.Pool // *[]byte, the fixed variant's key buffer
}

// NewHandler returns the variant's handler.
func NewHandler(variant string) (*Handler, error) {
	if variant != Bad && variant != Fixed {
		return nil, fmt.Errorf("c4strfmt: unknown variant %q (want %q or %q)", variant, Bad, Fixed)
	}
	fetchOnce.Do(fill)
	h := &Handler{variant: variant, counters: make(map[string]int64, 4096)}
	for i := range 4096 {
		e := decode(i)
		h.counters[string(keyBytes(nil, &e))] = int64(i)
	}
	h.scratch.New = func() any { b := make([]byte, 0, 128); return &b }
	return h, nil
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var evs [Batch]event
	at := rand.IntN(records - Batch)
	for i := range evs {
		evs[i] = decode(at + i)
	}
	var report string
	if h.variant == Bad {
		report = h.reportSprintf(evs[:])
	} else {
		report = h.reportBuilder(evs[:])
	}
	var out [64]byte
	b := append(out[:0], "lines="...)
	b = strconv.AppendInt(b, Batch, 10)
	b = append(b, " bytes="...)
	b = strconv.AppendInt(b, int64(len(report)), 10)
	b = append(b, '\n')
	w.Header().Set("Content-Type", "text/plain")
	w.Write(b)
}

// reportSprintf is the bad variant.
func (h *Handler) reportSprintf(evs []event) string {
	lines := make([]string, 0, len(evs))
	for i := range evs {
		e := &evs[i]
		key := fmt.Sprintf("imp:%s:%s:%d:%d", e.campaign, e.slot, e.user, e.day)
		seen := h.counters[key]
		line := fmt.Sprintf("ts=%d user=%d campaign=%s slot=%s country=%s", e.ts, e.user, e.campaign, e.slot, e.country)
		line += fmt.Sprintf(" price=%.4f", e.price) + " seen=" + fmt.Sprint(seen) + " key=" + key
		lines = append(lines, line)
	}
	return strings.Join(lines, "\n") + "\n"
}

// reportBuilder is the fixed variant: the same report, byte for byte.
func (h *Handler) reportBuilder(evs []event) string {
	kp := h.scratch.Get().(*[]byte)
	key := *kp
	var sb strings.Builder
	sb.Grow(len(evs) * 160)
	var num [32]byte
	for i := range evs {
		e := &evs[i]
		key = keyBytes(key[:0], e)
		seen := h.counters[string(key)] // no allocation for a lookup
		sb.WriteString("ts=")
		sb.Write(strconv.AppendInt(num[:0], e.ts, 10))
		sb.WriteString(" user=")
		sb.Write(strconv.AppendInt(num[:0], e.user, 10))
		sb.WriteString(" campaign=")
		sb.WriteString(e.campaign)
		sb.WriteString(" slot=")
		sb.WriteString(e.slot)
		sb.WriteString(" country=")
		sb.WriteString(e.country)
		sb.WriteString(" price=")
		sb.Write(strconv.AppendFloat(num[:0], e.price, 'f', 4, 64))
		sb.WriteString(" seen=")
		sb.Write(strconv.AppendInt(num[:0], seen, 10))
		sb.WriteString(" key=")
		sb.Write(key)
		sb.WriteByte('\n')
	}
	*kp = key
	h.scratch.Put(kp)
	return sb.String()
}

// keyBytes appends the event's counter key, "imp:campaign:slot:user:day".
func keyBytes(b []byte, e *event) []byte {
	b = append(b, "imp:"...)
	b = append(b, e.campaign...)
	b = append(b, ':')
	b = append(b, e.slot...)
	b = append(b, ':')
	b = strconv.AppendInt(b, e.user, 10)
	b = append(b, ':')
	return strconv.AppendInt(b, int64(e.day), 10)
}
