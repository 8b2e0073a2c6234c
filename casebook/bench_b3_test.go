package casebook

import "testing"

// BenchmarkB3 measures the B3 variants. The bad one's heap grows with every
// request (~0.4 KB kept per request on average): keep -benchtime to a
// request count, e.g. -benchtime=20000x, not a long duration.
func BenchmarkB3(b *testing.B) { benchCase(b, "b3") }
