package rules

import (
	"net"

	"github.com/perfdoctor/perfdoctor/bundle"
)

// LocalClients counts the clients established on listener l in snapshot s:
// the sockets whose remote end is l (clients on this host; remote clients'
// are not seen).
func LocalClients(s *bundle.SystemSnapshot, l bundle.Listener) int {
	if s == nil || s.Net == nil {
		return 0
	}
	n := 0
	for _, r := range s.Net.Remotes {
		if Listens(l, r.Addr) {
			n += r.States["ESTABLISHED"]
		}
	}
	return n
}

// Listens reports whether l is the listener addr (host:port) reaches.
func Listens(l bundle.Listener, addr string) bool {
	lh, lp, err := net.SplitHostPort(l.Addr)
	if err != nil {
		return false
	}
	h, p, err := net.SplitHostPort(addr)
	if err != nil || p != lp {
		return false
	}
	return h == lh || net.ParseIP(lh) != nil && net.ParseIP(lh).IsUnspecified()
}
