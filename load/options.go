package load

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"os"
	"strings"
)

// ParseHeaders reads "Name: value" lines into a header; nil for none.
func ParseHeaders(lines []string) (http.Header, error) {
	if len(lines) == 0 {
		return nil, nil
	}
	h := http.Header{}
	for _, line := range lines {
		name, value, ok := strings.Cut(line, ":")
		if !ok || strings.TrimSpace(name) == "" || strings.ContainsAny(line, "\r\n") {
			return nil, fmt.Errorf("%q: want \"Name: value\"", line)
		}
		h.Add(strings.TrimSpace(name), strings.TrimSpace(value))
	}
	return h, nil
}

// TrustCA is a TLS configuration that trusts the system's CAs and those in
// the PEM file (a test or staging CA).
func TrustCA(pemFile string) (*tls.Config, error) {
	pem, err := os.ReadFile(pemFile)
	if err != nil {
		return nil, err
	}
	roots, err := x509.SystemCertPool()
	if err != nil {
		roots = x509.NewCertPool()
	}
	if !roots.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%s: no PEM certificate in it", pemFile)
	}
	return &tls.Config{RootCAs: roots}, nil
}
