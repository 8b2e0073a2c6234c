// Package b4report reproduces casebook case B4, reflection-serialization (with
// gc-pressure): an ad and content delivery service whose reporting path ran
// encoding/json and reflection on every request; GC reached ~25% of CPU
// under load. Moving to json-iterator and removing reflection kept p90 at
// 100-200 ms at 500 QPS instead of a collapse.
//
// Each request is a partner's batch of ad events (impressions, clicks,
// conversions) that the service decodes, checks and aggregates into a
// per-campaign report, encoded as JSON. The load tool sends plain GETs, so
// the service stands in for the request body with one of Payloads recorded
// batches (about 9 KB each), chosen per request.
//
//   - Bad: json.Unmarshal into a map[string]interface{} tree, walked with
//     type assertions; the report is built as another interface{} tree and
//     encoded with json.Marshal. Reflection, and an allocation per value.
//   - Fixed: typed structs with a decoder and an encoder written for them,
//     without reflection: what a code generator such as easyjson produces
//     (written out here so that the casebook needs no generator). Keys are
//     matched in place and repeated strings are interned, so a batch costs a
//     few allocations instead of about a thousand.
//
// Both variants answer byte-identical reports and do the same per-event
// fraud check (allocation-free hashing split over three functions), the
// service's own work.
//
// This is "any Go service": it imports nothing from perfdoctor.
package b4report

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// Variants.
const (
	Bad   = "bad"
	Fixed = "fixed"
)

// Payloads is how many recorded batches the service cycles through.
const Payloads = 32

const (
	eventsPerBatch = 48
	campaignsPer   = 8  // distinct campaigns in a batch
	fraudRounds    = 12 // rounds of each of the three per-event hashes
)

// Handler is the reporting service.
type Handler struct {
	variant  string
	payloads [][]byte
	seq      atomic.Uint64
}

// NewHandler returns the variant's service.
func NewHandler(variant string) (*Handler, error) {
	if variant != Bad && variant != Fixed {
		return nil, fmt.Errorf("b4report: unknown variant %q (want %q or %q)", variant, Bad, Fixed)
	}
	h := &Handler{variant: variant}
	for i := range Payloads {
		h.payloads = append(h.payloads, payload(i))
	}
	return h, nil
}

// ServeHTTP decodes the request's batch and answers with its report.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	raw := h.payloads[h.seq.Add(1)%Payloads]
	var out []byte
	var err error
	if h.variant == Bad {
		out, err = reportDynamic(raw)
	} else {
		out, err = reportTyped(raw)
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(out)
}

// ---- shared logic ----

// fraudScore is the per-event check both variants run on the same inputs.
func fraudScore(id, model, app string, cost int64) bool {
	h := uint64(cost) * 0x9e3779b97f4a7c15
	h = scoreID(id, h)
	h = scoreDevice(model, h)
	h = scoreApp(app, h)
	return h%16 == 0
}

// scoreID, scoreDevice and scoreApp are allocation-free hashing, split in
// three (and not inlined) so that no single application function dominates
// the profile.

//go:noinline
func scoreID(s string, h uint64) uint64 {
	for range fraudRounds {
		for i := 0; i < len(s); i++ {
			h = (h ^ uint64(s[i])) * 1099511628211
		}
	}
	return h
}

//go:noinline
func scoreDevice(s string, h uint64) uint64 {
	for range fraudRounds {
		for i := 0; i < len(s); i++ {
			h = (h * 1099511628211) ^ uint64(s[i])
		}
	}
	return h
}

//go:noinline
func scoreApp(s string, h uint64) uint64 {
	for range fraudRounds {
		for i := len(s) - 1; i >= 0; i-- {
			h = (h ^ uint64(s[i])) * 1099511628211
		}
	}
	return h
}

// campaignTotals is one report line.
type campaignTotals struct {
	Campaign                                string
	Impressions, Clicks, Conversions, Views int64
	SpendMicros                             int64
}

// ---- bad: interface{} trees and encoding/json ----

var errShape = errors.New("b4report: unexpected batch shape")

func reportDynamic(raw []byte) ([]byte, error) {
	var batch map[string]interface{}
	if err := json.Unmarshal(raw, &batch); err != nil {
		return nil, err
	}
	events, ok := batch["events"].([]interface{})
	if !ok {
		return nil, errShape
	}
	byCampaign := map[string]map[string]interface{}{}
	suspicious := 0
	for _, e := range events {
		ev, ok := e.(map[string]interface{})
		if !ok {
			return nil, errShape
		}
		campaign, _ := ev["campaign"].(string)
		id, _ := ev["id"].(string)
		cost, _ := ev["cost_micros"].(float64)
		device, _ := ev["device"].(map[string]interface{})
		model, _ := device["model"].(string)
		app, _ := device["app"].(string)
		if fraudScore(id, model, app, int64(cost)) {
			suspicious++
			continue
		}
		line := byCampaign[campaign]
		if line == nil {
			line = map[string]interface{}{"campaign": campaign, "impressions": 0.0, "clicks": 0.0,
				"conversions": 0.0, "viewable": 0.0, "spend_micros": 0.0}
			byCampaign[campaign] = line
		}
		switch ev["type"] {
		case "impression":
			line["impressions"] = line["impressions"].(float64) + 1
		case "click":
			line["clicks"] = line["clicks"].(float64) + 1
		case "conversion":
			line["conversions"] = line["conversions"].(float64) + 1
		}
		if v, _ := ev["viewable"].(bool); v {
			line["viewable"] = line["viewable"].(float64) + 1
		}
		line["spend_micros"] = line["spend_micros"].(float64) + cost
	}
	names := make([]string, 0, len(byCampaign))
	for n := range byCampaign {
		names = append(names, n)
	}
	sort.Strings(names)
	lines := make([]interface{}, 0, len(names))
	for _, n := range names {
		lines = append(lines, byCampaign[n])
	}
	report := map[string]interface{}{
		"partner":    batch["partner"],
		"batch_id":   batch["batch_id"],
		"events":     len(events),
		"suspicious": suspicious,
		"campaigns":  lines,
	}
	return json.Marshal(report)
}

// ---- fixed: typed structs, a generated-style codec ----

// Batch is a partner's batch of events.
type Batch struct {
	Partner  string
	BatchID  int64
	SentAt   string
	Currency string
	Events   []Event
}

// Event is one ad event.
type Event struct {
	ID         string
	TS         int64
	Campaign   string
	Creative   string
	Type       string
	Country    string
	Device     Device
	CostMicros int64
	Viewable   bool
	Tags       []string
}

// Device describes where the ad was shown.
type Device struct{ OS, Model, App string }

// decodeState is a decoder and its Batch, reused across requests (as
// generated decoders' callers commonly do): the events slice, the tag
// slices and the interned strings survive from one batch to the next.
type decodeState struct {
	b Batch
	d decoder
}

var decodeStates = sync.Pool{New: func() any { return new(decodeState) }}

// maxInterned bounds the interned strings kept across batches.
const maxInterned = 4096

func reportTyped(raw []byte) ([]byte, error) {
	st := decodeStates.Get().(*decodeState)
	defer func() {
		st.d.buf = nil
		if len(st.d.intern) > maxInterned {
			clear(st.d.intern)
		}
		decodeStates.Put(st)
	}()
	st.d.buf, st.d.pos = raw, 0
	b := &st.b
	if err := st.d.batch(b); err != nil {
		return nil, err
	}
	var lines []campaignTotals
	suspicious := 0
	for i := range b.Events {
		ev := &b.Events[i]
		if fraudScore(ev.ID, ev.Device.Model, ev.Device.App, ev.CostMicros) {
			suspicious++
			continue
		}
		k := -1
		for j := range lines {
			if lines[j].Campaign == ev.Campaign {
				k = j
				break
			}
		}
		if k < 0 {
			lines = append(lines, campaignTotals{Campaign: ev.Campaign})
			k = len(lines) - 1
		}
		l := &lines[k]
		switch ev.Type {
		case "impression":
			l.Impressions++
		case "click":
			l.Clicks++
		case "conversion":
			l.Conversions++
		}
		if ev.Viewable {
			l.Views++
		}
		l.SpendMicros += ev.CostMicros
	}
	slices.SortFunc(lines, func(a, b campaignTotals) int { return strings.Compare(a.Campaign, b.Campaign) })

	// Keys in the order encoding/json writes a map's: sorted.
	out := make([]byte, 0, 128+96*len(lines))
	out = append(out, `{"batch_id":`...)
	out = strconv.AppendInt(out, b.BatchID, 10)
	out = append(out, `,"campaigns":[`...)
	for i, l := range lines {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, `{"campaign":`...)
		out = appendString(out, l.Campaign)
		out = append(out, `,"clicks":`...)
		out = strconv.AppendInt(out, l.Clicks, 10)
		out = append(out, `,"conversions":`...)
		out = strconv.AppendInt(out, l.Conversions, 10)
		out = append(out, `,"impressions":`...)
		out = strconv.AppendInt(out, l.Impressions, 10)
		out = append(out, `,"spend_micros":`...)
		out = strconv.AppendInt(out, l.SpendMicros, 10)
		out = append(out, `,"viewable":`...)
		out = strconv.AppendInt(out, l.Views, 10)
		out = append(out, '}')
	}
	out = append(out, `],"events":`...)
	out = strconv.AppendInt(out, int64(len(b.Events)), 10)
	out = append(out, `,"partner":`...)
	out = appendString(out, b.Partner)
	out = append(out, `,"suspicious":`...)
	out = strconv.AppendInt(out, int64(suspicious), 10)
	out = append(out, '}')
	return out, nil
}

// appendString appends s as a JSON string, escaped as encoding/json does for
// the ASCII it can meet here (quotes, backslashes, control characters and
// the HTML-sensitive <, >, &).
func appendString(out []byte, s string) []byte {
	const hex = "0123456789abcdef"
	out = append(out, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			out = append(out, '\\', c)
		case c < 0x20 || c == '<' || c == '>' || c == '&':
			out = append(out, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		default:
			out = append(out, c)
		}
	}
	return append(out, '"')
}

// decoder is a JSON reader for Batch, in the style of generated code: it
// reads the known fields in place, skips unknown ones, and allocates only
// the strings it keeps (interned per batch).
type decoder struct {
	buf    []byte
	pos    int
	intern map[string]string
}

func (d *decoder) errorf(format string, args ...any) error {
	return fmt.Errorf("b4report: offset %d: "+format, append([]any{d.pos}, args...)...)
}

func (d *decoder) ws() {
	for d.pos < len(d.buf) {
		switch d.buf[d.pos] {
		case ' ', '\t', '\n', '\r':
			d.pos++
		default:
			return
		}
	}
}

func (d *decoder) expect(c byte) error {
	d.ws()
	if d.pos >= len(d.buf) || d.buf[d.pos] != c {
		return d.errorf("want %q", c)
	}
	d.pos++
	return nil
}

// more reports whether another member or element follows, consuming the
// comma; it consumes the closing bracket when not.
func (d *decoder) more(end byte, first bool) (bool, error) {
	d.ws()
	if d.pos >= len(d.buf) {
		return false, d.errorf("unexpected end")
	}
	if d.buf[d.pos] == end {
		d.pos++
		return false, nil
	}
	if !first {
		if d.buf[d.pos] != ',' {
			return false, d.errorf("want ',' or %q", end)
		}
		d.pos++
	}
	return true, nil
}

// rawString returns the bytes of the next string, unescaped. Without
// escapes it points into the input (no copy).
func (d *decoder) rawString() ([]byte, error) {
	if err := d.expect('"'); err != nil {
		return nil, err
	}
	start := d.pos
	for d.pos < len(d.buf) {
		switch c := d.buf[d.pos]; {
		case c == '"':
			d.pos++
			return d.buf[start : d.pos-1], nil
		case c == '\\':
			return d.escapedString(start)
		case c < 0x20:
			return nil, d.errorf("control character in string")
		}
		d.pos++
	}
	return nil, d.errorf("unterminated string")
}

// escapedString finishes a string that contains escapes, via strconv's
// unquoting (JSON's escapes are a subset of Go's, except \/).
func (d *decoder) escapedString(start int) ([]byte, error) {
	for d.pos < len(d.buf) && d.buf[d.pos] != '"' {
		if d.buf[d.pos] == '\\' {
			d.pos++
		}
		d.pos++
	}
	if d.pos >= len(d.buf) {
		return nil, d.errorf("unterminated string")
	}
	d.pos++
	quoted := make([]byte, 0, d.pos-start+1)
	quoted = append(quoted, '"')
	for i := start; i < d.pos-1; i++ {
		if d.buf[i] == '\\' && d.buf[i+1] == '/' {
			continue // \/ is JSON's, not Go's: drop the backslash
		}
		quoted = append(quoted, d.buf[i])
		if d.buf[i] == '\\' {
			i++
			quoted = append(quoted, d.buf[i])
		}
	}
	quoted = append(quoted, '"')
	s, err := strconv.Unquote(string(quoted))
	if err != nil {
		return nil, d.errorf("bad string escape: %v", err)
	}
	return []byte(s), nil
}

// str reads a string and interns it: repeated values (campaigns, countries,
// device models) are allocated once, not per event.
func (d *decoder) str() (string, error) {
	b, err := d.rawString()
	if err != nil {
		return "", err
	}
	if s, ok := d.intern[string(b)]; ok { // no allocation for the lookup
		return s, nil
	}
	s := string(b)
	if d.intern == nil {
		d.intern = make(map[string]string, 64)
	}
	d.intern[s] = s
	return s, nil
}

func (d *decoder) int() (int64, error) {
	d.ws()
	start := d.pos
	for d.pos < len(d.buf) && (d.buf[d.pos] == '-' || d.buf[d.pos] >= '0' && d.buf[d.pos] <= '9') {
		d.pos++
	}
	n, err := strconv.ParseInt(string(d.buf[start:d.pos]), 10, 64) // no allocation: the conversion does not escape
	if err != nil {
		return 0, d.errorf("bad integer: %v", err)
	}
	return n, nil
}

func (d *decoder) bool() (bool, error) {
	d.ws()
	switch {
	case len(d.buf)-d.pos >= 4 && string(d.buf[d.pos:d.pos+4]) == "true":
		d.pos += 4
		return true, nil
	case len(d.buf)-d.pos >= 5 && string(d.buf[d.pos:d.pos+5]) == "false":
		d.pos += 5
		return false, nil
	}
	return false, d.errorf("want a boolean")
}

// skip passes over any value.
func (d *decoder) skip() error {
	d.ws()
	if d.pos >= len(d.buf) {
		return d.errorf("unexpected end")
	}
	switch c := d.buf[d.pos]; c {
	case '"':
		_, err := d.rawString()
		return err
	case '{', '[':
		end := byte('}')
		if c == '[' {
			end = ']'
		}
		d.pos++
		for first := true; ; first = false {
			ok, err := d.more(end, first)
			if err != nil || !ok {
				return err
			}
			if c == '{' {
				if _, err := d.rawString(); err != nil {
					return err
				}
				if err := d.expect(':'); err != nil {
					return err
				}
			}
			if err := d.skip(); err != nil {
				return err
			}
		}
	default: // number, true, false, null
		for d.pos < len(d.buf) {
			switch d.buf[d.pos] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				return nil
			}
			d.pos++
		}
		return nil
	}
}

// object reads an object, calling field for each member's key; field must
// consume the value.
func (d *decoder) object(field func(key []byte) error) error {
	if err := d.expect('{'); err != nil {
		return err
	}
	for first := true; ; first = false {
		ok, err := d.more('}', first)
		if err != nil || !ok {
			return err
		}
		key, err := d.rawString()
		if err != nil {
			return err
		}
		if err := d.expect(':'); err != nil {
			return err
		}
		if err := field(key); err != nil {
			return err
		}
	}
}

func (d *decoder) batch(b *Batch) error {
	*b = Batch{Events: b.Events[:0]}
	return d.object(func(key []byte) (err error) {
		switch string(key) {
		case "partner":
			b.Partner, err = d.str()
		case "batch_id":
			b.BatchID, err = d.int()
		case "sent_at":
			b.SentAt, err = d.str()
		case "currency":
			b.Currency, err = d.str()
		case "events":
			if err = d.expect('['); err != nil {
				return err
			}
			for first := true; ; first = false {
				ok, err := d.more(']', first)
				if err != nil || !ok {
					return err
				}
				if n := len(b.Events); n < cap(b.Events) {
					b.Events = b.Events[:n+1] // reuse the event and its tag slice
					e := &b.Events[n]
					*e = Event{Tags: e.Tags[:0]}
				} else {
					b.Events = append(b.Events, Event{})
				}
				if err := d.event(&b.Events[len(b.Events)-1]); err != nil {
					return err
				}
			}
		default:
			err = d.skip()
		}
		return err
	})
}

func (d *decoder) event(e *Event) error {
	return d.object(func(key []byte) (err error) {
		switch string(key) {
		case "id":
			var b []byte
			if b, err = d.rawString(); err == nil {
				e.ID = string(b) // unique per event: not interned
			}
		case "ts":
			e.TS, err = d.int()
		case "campaign":
			e.Campaign, err = d.str()
		case "creative":
			e.Creative, err = d.str()
		case "type":
			e.Type, err = d.str()
		case "country":
			e.Country, err = d.str()
		case "cost_micros":
			e.CostMicros, err = d.int()
		case "viewable":
			e.Viewable, err = d.bool()
		case "device":
			err = d.object(func(key []byte) (err error) {
				switch string(key) {
				case "os":
					e.Device.OS, err = d.str()
				case "model":
					e.Device.Model, err = d.str()
				case "app":
					e.Device.App, err = d.str()
				default:
					err = d.skip()
				}
				return err
			})
		case "tags":
			e.Tags = e.Tags[:0]
			if err = d.expect('['); err != nil {
				return err
			}
			for first := true; ; first = false {
				ok, err := d.more(']', first)
				if err != nil || !ok {
					return err
				}
				t, err := d.str()
				if err != nil {
					return err
				}
				e.Tags = append(e.Tags, t)
			}
		default:
			err = d.skip()
		}
		return err
	})
}

// ---- recorded payloads ----

// payload builds recorded batch i deterministically, in encoding/json's
// output format.
func payload(i int) []byte {
	types := []string{"impression", "impression", "impression", "impression", "click", "impression", "conversion", "impression"}
	countries := []string{"US", "DE", "FR", "GB", "JP", "BR", "IN", "ES"}
	oses := []string{"ios", "android"}
	models := []string{"iPhone15,2", "iPhone14,5", "SM-S918B", "Pixel 8 Pro", "SM-A546E", "iPhone13,1"}
	apps := []string{"com.example.news", "com.example.weather", "com.example.puzzle", "com.example.video/player"}
	tags := [][]string{{"sports"}, {"premium", "video"}, {}, {"news", "above-the-fold"}}
	type device struct {
		OS    string `json:"os"`
		Model string `json:"model"`
		App   string `json:"app"`
	}
	type event struct {
		ID         string   `json:"id"`
		TS         int64    `json:"ts"`
		Campaign   string   `json:"campaign"`
		Creative   string   `json:"creative"`
		Type       string   `json:"type"`
		Country    string   `json:"country"`
		Device     device   `json:"device"`
		CostMicros int64    `json:"cost_micros"`
		Viewable   bool     `json:"viewable"`
		Tags       []string `json:"tags"`
	}
	type batch struct {
		Partner  string  `json:"partner"`
		BatchID  int64   `json:"batch_id"`
		SentAt   string  `json:"sent_at"`
		Currency string  `json:"currency"`
		Events   []event `json:"events"`
	}
	b := batch{Partner: "partner-" + strconv.Itoa(i%5), BatchID: int64(100_000 + i), SentAt: "2024-11-11T00:00:00Z", Currency: "USD"}
	for k := range eventsPerBatch {
		c := (i*3 + k) % campaignsPer
		b.Events = append(b.Events, event{
			ID:         "evt-" + strconv.Itoa(i) + "-" + strconv.Itoa(k) + "-7f3a9c",
			TS:         1731283200000 + int64(i*1000+k*17),
			Campaign:   "campaign-" + strconv.Itoa(1000+c+8*(i%4)),
			Creative:   "cr-" + strconv.Itoa(1000+c) + "-" + strconv.Itoa(k%3),
			Type:       types[(i+k)%len(types)],
			Country:    countries[(i+2*k)%len(countries)],
			Device:     device{OS: oses[k%2], Model: models[(i+k)%len(models)], App: apps[(i*7+k)%len(apps)]},
			CostMicros: int64(100 + (i*7919+k*104729)%4000),
			Viewable:   (i+k)%3 != 0,
			Tags:       tags[(i+k)%len(tags)],
		})
	}
	out, err := json.Marshal(b)
	if err != nil {
		panic(err)
	}
	return out
}
