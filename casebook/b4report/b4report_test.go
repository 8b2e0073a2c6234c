package b4report

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"
)

func TestHandler(t *testing.T) {
	var bodies []string
	for _, v := range []string{Bad, Fixed} {
		h, err := NewHandler(v)
		if err != nil {
			t.Fatal(err)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
		if rec.Code != http.StatusOK || !json.Valid(rec.Body.Bytes()) {
			t.Fatalf("%s: %d %q", v, rec.Code, rec.Body.String())
		}
		bodies = append(bodies, rec.Body.String())
	}
	if bodies[0] != bodies[1] {
		t.Errorf("reports differ:\nbad   %s\nfixed %s", bodies[0], bodies[1])
	}
}

// TestSameReports checks the generated-style codec against encoding/json on
// every recorded payload and on one with escapes and unknown fields.
func TestSameReports(t *testing.T) {
	odd := []byte(`{"partner":"p\"<1>\u00e9\/x","extra":{"a":[1,{"b":null}],"c":-1.5e3},"batch_id":7,"sent_at":"","currency":"EUR",
	 "events":[{"id":"e\\1","ts":1,"campaign":"c&1","creative":"x","type":"click","country":"DE","unknown":[true,false],
	 "device":{"os":"ios","model":"m\tx","app":"a","more":"z"},"cost_micros":-5,"viewable":true,"tags":["t","u","v"]}]}`)
	payloads := [][]byte{odd}
	for i := range Payloads {
		payloads = append(payloads, payload(i))
	}
	for i, raw := range payloads {
		want, err := reportDynamic(raw)
		if err != nil {
			t.Fatal(err)
		}
		got, err := reportTyped(raw)
		if err != nil {
			t.Fatalf("payload %d: %v", i, err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("payload %d:\ntyped   %s\ndynamic %s", i, got, want)
		}
	}
	// The decoder fills the same struct encoding/json would.
	type device struct{ OS, Model, App string }
	type event struct {
		ID, Campaign, Creative, Type, Country string
		TS                                    int64
		Device                                device
		CostMicros                            int64 `json:"cost_micros"`
		Viewable                              bool
		Tags                                  []string
	}
	var viaJSON struct {
		Partner  string
		BatchID  int64 `json:"batch_id"`
		SentAt   string
		Currency string
		Events   []event
	}
	if err := json.Unmarshal(odd, &viaJSON); err != nil {
		t.Fatal(err)
	}
	var b Batch
	if err := (&decoder{buf: odd}).batch(&b); err != nil {
		t.Fatal(err)
	}
	e := b.Events[0]
	got := event{ID: e.ID, Campaign: e.Campaign, Creative: e.Creative, Type: e.Type, Country: e.Country, TS: e.TS,
		Device: device(e.Device), CostMicros: e.CostMicros, Viewable: e.Viewable, Tags: e.Tags}
	if b.Partner != viaJSON.Partner || b.BatchID != viaJSON.BatchID || b.Currency != viaJSON.Currency || !reflect.DeepEqual(got, viaJSON.Events[0]) {
		t.Errorf("decoded %+v %+v, encoding/json %+v", b, got, viaJSON)
	}
}

func TestMalformed(t *testing.T) {
	for _, in := range []string{``, `{`, `{"events":[{"ts":"x"}]}`, `{"events":[{"id":"unterminated}]}`, `{"events":[1,]}`, `[]`} {
		if _, err := reportTyped([]byte(in)); err == nil {
			t.Errorf("accepted %q", in)
		}
	}
}

func TestInvalidVariant(t *testing.T) {
	if _, err := NewHandler("worse"); err == nil {
		t.Error("accepted an unknown variant")
	}
}

func BenchmarkReport(b *testing.B) {
	raw := payload(3)
	b.Logf("payload %d bytes", len(raw))
	for _, tc := range []struct {
		name string
		f    func([]byte) ([]byte, error)
	}{{"dynamic", reportDynamic}, {"typed", reportTyped}} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := tc.f(raw); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
