package r2relay

import (
	"bytes"
	"net"
	"sync"
	"testing"
	"time"
)

// Both variants relay each query's answer to the client that asked, with
// the client's own query ID, also when clients use the same IDs at once.
func TestRelay(t *testing.T) {
	for _, v := range []string{Bad, Fixed} {
		t.Run(v, func(t *testing.T) {
			r, err := New(v, "")
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			var wg sync.WaitGroup
			for c := range 4 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					conn, err := net.Dial("udp", r.UDPAddr())
					if err != nil {
						t.Error(err)
						return
					}
					defer conn.Close()
					buf := make([]byte, maxDatagram)
					for i := range 50 {
						q := []byte{0x12, 0x34, ' ', 'c', byte('0' + c), ' ', byte('a' + i%26)}
						conn.SetDeadline(time.Now().Add(5 * time.Second))
						if _, err := conn.Write(q); err != nil {
							t.Error(err)
							return
						}
						n, err := conn.Read(buf)
						if err != nil {
							t.Error(err)
							return
						}
						if !bytes.HasPrefix(buf[:n], q) || !bytes.Contains(buf[:n], []byte(" A 10.0.0.")) {
							t.Errorf("client %d query %q: answer %q", c, q, buf[:n])
							return
						}
					}
				}()
			}
			wg.Wait()
			// The relay counts an answer after sending it, so the client
			// may read the last one first: wait for the count, bounded.
			for deadline := time.Now().Add(5 * time.Second); r.Relayed() < 200 && time.Now().Before(deadline); {
				time.Sleep(time.Millisecond)
			}
			if got := r.Relayed(); got != 200 {
				t.Errorf("relayed %d answers, want 200", got)
			}
		})
	}
}

func TestNewErrors(t *testing.T) {
	if _, err := New("worse", ""); err == nil {
		t.Error("unknown variant accepted")
	}
	if _, err := New(Bad, "no-port"); err == nil {
		t.Error("bad upstream accepted")
	}
}
