package human

import "testing"

func TestBytes(t *testing.T) {
	for v, want := range map[uint64]string{512: "512 B", 1536: "1.5 KiB", 100 << 20: "100 MiB", 3 << 30: "3 GiB"} {
		if got := Bytes(v); got != want {
			t.Errorf("Bytes(%d) = %q, want %q", v, got, want)
		}
	}
}

func TestNumber(t *testing.T) {
	for v, want := range map[float64]string{7: "7", 0.25: "0.25", 19.14: "19.1", 6060.6: "6061", 48200: "48.2k", 11e6: "11.0M"} {
		if got := Number(v); got != want {
			t.Errorf("Number(%v) = %q, want %q", v, got, want)
		}
	}
}
