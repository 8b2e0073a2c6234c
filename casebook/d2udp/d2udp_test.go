package d2udp

import (
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

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
			if rec.Code != http.StatusOK {
				t.Fatalf("%s: %d %q", v, rec.Code, rec.Body.String())
			}
		}
		// Loopback delivery is asynchronous; wait briefly for the sink.
		deadline := time.Now().Add(2 * time.Second)
		for h.Received() < reqs*Datagrams && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		if got := h.Received(); got != reqs*Datagrams {
			t.Errorf("%s: sink got %d datagrams, want %d", v, got, reqs*Datagrams)
		}
		if err := h.Close(); err != nil {
			t.Error(err)
		}
	}
}

func TestExternalDownstream(t *testing.T) {
	sink, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer sink.Close()
	h, err := NewHandler(Fixed, sink.LocalAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if h.Downstream() != sink.LocalAddr().String() {
		t.Errorf("downstream %s, want %s", h.Downstream(), sink.LocalAddr())
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("%d %q", rec.Code, rec.Body.String())
	}
	sink.SetReadDeadline(time.Now().Add(2 * time.Second))
	buf := make([]byte, 128)
	n, _, err := sink.ReadFromUDP(buf)
	if err != nil || string(buf[:n]) != "evt seq=1 part=0" {
		t.Errorf("first datagram %q, %v", buf[:n], err)
	}
}

func TestInvalid(t *testing.T) {
	if _, err := NewHandler("worse", ""); err == nil {
		t.Error("accepted an unknown variant")
	}
	if _, err := NewHandler(Bad, "no-port"); err == nil {
		t.Error("accepted a downstream without a port")
	}
}
