package system

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
)

// tcpSocket is one line of /proc/net/tcp or tcp6 (or udp and udp6, which
// have the same columns). procfs parses these files too, but drops the
// timer column, and the TIME_WAIT timer is what dates a closed connection:
// it says when each one closed.
type tcpSocket struct {
	local, remote net.IP
	lport, rport  uint64
	state         uint64
	txQueue       uint64
	rxQueue       uint64
	timer         uint64 // 0 none, 1 retransmit, 2 keepalive, 3 TIME_WAIT, 4 zero window probe
	expires       uint64 // clock ticks (USER_HZ) until the timer fires
	inode         uint64 // 0 for sockets no process holds (TIME_WAIT)
}

// parseSockets calls fn for each socket line of a /proc/net/tcp{,6} or
// udp{,6} file.
func parseSockets(r io.Reader, fn func(tcpSocket)) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 64<<10)
	line := 0
	for sc.Scan() {
		line++
		f := bytes.Fields(sc.Bytes())
		if line == 1 && len(f) > 0 && bytes.Equal(f[0], []byte("sl")) {
			continue
		}
		if len(f) == 0 {
			continue
		}
		s, err := parseTCPLine(f)
		if err != nil {
			return fmt.Errorf("line %d: %w", line, err)
		}
		fn(s)
	}
	return sc.Err()
}

var errTCPLine = errors.New("malformed socket line")

// parseTCPLine reads "sl local rem st tx:rx tr:when ..." fields.
func parseTCPLine(f [][]byte) (tcpSocket, error) {
	var s tcpSocket
	if len(f) < 6 {
		return s, errTCPLine
	}
	var err error
	if s.local, s.lport, err = parseAddr(f[1]); err != nil {
		return s, err
	}
	if s.remote, s.rport, err = parseAddr(f[2]); err != nil {
		return s, err
	}
	if s.state, err = strconv.ParseUint(string(f[3]), 16, 8); err != nil {
		return s, errTCPLine
	}
	if s.txQueue, s.rxQueue, err = hexPair(f[4]); err != nil {
		return s, err
	}
	if s.timer, s.expires, err = hexPair(f[5]); err != nil {
		return s, err
	}
	if len(f) > 9 { // "retrnsmt uid timeout inode" follow
		if s.inode, err = strconv.ParseUint(string(f[9]), 10, 64); err != nil {
			return s, errTCPLine
		}
	}
	return s, nil
}

func hexPair(b []byte) (uint64, uint64, error) {
	a, c, ok := bytes.Cut(b, []byte(":"))
	if !ok {
		return 0, 0, errTCPLine
	}
	x, err1 := strconv.ParseUint(string(a), 16, 64)
	y, err2 := strconv.ParseUint(string(c), 16, 64)
	if err1 != nil || err2 != nil {
		return 0, 0, errTCPLine
	}
	return x, y, nil
}

// parseAddr reads "0100007F:1F90": the address as 32-bit words in host
// (little-endian) order, and the port in hex.
func parseAddr(b []byte) (net.IP, uint64, error) {
	a, p, ok := bytes.Cut(b, []byte(":"))
	if !ok || (len(a) != 8 && len(a) != 32) {
		return nil, 0, errTCPLine
	}
	ip := make(net.IP, len(a)/2)
	if _, err := hex.Decode(ip, a); err != nil {
		return nil, 0, errTCPLine
	}
	for i := 0; i < len(ip); i += 4 {
		ip[i], ip[i+1], ip[i+2], ip[i+3] = ip[i+3], ip[i+2], ip[i+1], ip[i]
	}
	port, err := strconv.ParseUint(string(p), 16, 16)
	if err != nil {
		return nil, 0, errTCPLine
	}
	return ip, port, nil
}
