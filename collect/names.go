package collect

import (
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"
)

// DefaultBundleName makes a bundle directory name from the target's host
// and the time: perfdoctor-HOST-PORT-20060102-150405.
func DefaultBundleName(target string, now time.Time) string {
	host := "target"
	if u, err := url.Parse(target); err == nil && u.Host != "" {
		host = strings.NewReplacer(":", "-", "[", "", "]", "").Replace(u.Host)
	}
	return fmt.Sprintf("perfdoctor-%s-%s", host, now.Format("20060102-150405"))
}

// TokenEnv names the environment variable holding an agent's bearer token.
const TokenEnv = "PERFDOCTOR_TOKEN"

// ReadToken returns the agent token from the file or, with no file, from
// $PERFDOCTOR_TOKEN. A token never comes from the command line, where ps
// shows it.
func ReadToken(file string) (string, error) {
	if file == "" {
		return os.Getenv(TokenEnv), nil
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("token: %w", err)
	}
	tok := strings.TrimSpace(string(b))
	if tok == "" || strings.ContainsAny(tok, "\r\n") {
		return "", fmt.Errorf("token: %s must hold one non-empty line", file)
	}
	return tok, nil
}
