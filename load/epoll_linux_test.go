package load

import "testing"

// TestParserOnPieces: the event loop sees responses in pieces. Every
// prefix of a response must read as incomplete, never as an error or a
// different response, and the whole must read as complete, leaving the
// next response's bytes alone.
func TestParserOnPieces(t *testing.T) {
	for _, tc := range []struct {
		name, resp string
		head       bool
		status     int
		keep       bool
	}{
		{"content-length", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello", false, 200, true},
		{"chunked", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n1;x=y\r\n!\r\n0\r\nT: 1\r\n\r\n", false, 200, true},
		{"100 continue", "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 503 No\r\nContent-Length: 2\r\n\r\nno", false, 503, true},
		{"head", "HTTP/1.1 200 OK\r\nContent-Length: 99\r\n\r\n", true, 200, true},
		{"close", "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 1\r\n\r\nx", false, 200, false},
	} {
		var p responseParser
		full := tc.resp + "HTTP/1.1 200 OK\r\n" // the start of the next one
		for n := 0; n < len(tc.resp); n++ {
			if _, _, _, complete, err := p.parse([]byte(tc.resp[:n]), tc.head, false); complete || err != nil {
				t.Fatalf("%s: prefix of %d bytes: complete=%v err=%v", tc.name, n, complete, err)
			}
		}
		status, keep, used, complete, err := p.parse([]byte(full), tc.head, false)
		if !complete || err != nil || status != tc.status || keep != tc.keep || used != len(tc.resp) {
			t.Errorf("%s: status %d keep %v used %d/%d complete %v err %v", tc.name, status, keep, used, len(tc.resp), complete, err)
		}
	}
	// A body that runs to the end of the connection completes only then.
	var p responseParser
	resp := []byte("HTTP/1.1 200 OK\r\n\r\nall of it")
	if _, _, _, complete, err := p.parse(resp, false, false); complete || err != nil {
		t.Errorf("close-delimited body complete before the end: %v %v", complete, err)
	}
	if status, keep, used, complete, err := p.parse(resp, false, true); !complete || err != nil || status != 200 || keep || used != len(resp) {
		t.Errorf("close-delimited body at the end: %d %v %d %v %v", status, keep, used, complete, err)
	}
	// A short body at the end of the connection is an error.
	if _, _, _, _, err := p.parse([]byte("HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nab"), false, true); err == nil {
		t.Error("short body at the end accepted")
	}
}
