package rules

// A connection costs more than the frames that open and close it: socket
// creation and its options, the event loop's registration of each new
// descriptor, the per-connection state the program sets up and frees, and
// the handshake's and teardown's packets, which the kernel processes in soft
// interrupts wherever they land. Keeping connections removes all of it. On
// six measured interventions the fix removed 1.2 to 1.7 times the share the
// connect, accept and close frames hold of the process's CPU (CPU per unit,
// bad against fixed): HAProxy's server close 0.67 of 0.39 (NET001), Tomcat
// closing each connection 0.59 of 0.40 (NET007's connection per request),
// Caddy's proxy without keep-alive 0.43 of 0.36, casebook D2 0.72 of 0.58
// and R2 0.59 of 0.35; nginx's proxy without upstream keep-alive gained
// 2.64x in throughput, at least 0.62 of 0.42. The estimate is the median
// ratio (1.48, rounded), the range from the frames' share to a little above
// the largest.
const (
	connectionDragEstimate = 1.5
	connectionDragHigh     = 1.75
	maxConnectionRemoved   = 0.95
)

// WithConnectionDrag sets what keeping connections removes, from the
// shares of CPU the connection frames hold: low and high bound the frames'
// share (they are one figure where the rule has no range), point the rule's
// own estimate of it.
func WithConnectionDrag(f *Finding, low, point, high float64) {
	f.Impact = min(point*connectionDragEstimate, maxConnectionRemoved)
	f.ImpactRange = &[2]float64{min(low, f.Impact), max(f.Impact, min(high*connectionDragHigh, maxConnectionRemoved))}
}
