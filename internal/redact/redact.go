// Package redact replaces what looks like a credential in command lines,
// URLs and configuration values before perfdoctor stores or shows them:
// bundles, reports and load results can travel further than the machine.
package redact

import (
	"net/url"
	"regexp"
	"strings"
)

// Redacted replaces every secret that a command line or URL gives away.
const Redacted = "REDACTED"

// secretWords mark a flag, variable or query parameter whose value is a
// credential. Matching is by substring, so "db-pass" and "GITHUB_TOKEN"
// count too (and "--bypass-cache" with them); over-redacting a harmless value costs little, leaking one a lot.
var secretWords = []string{
	"pass", "pwd", "secret", "token", "apikey", "api-key", "api_key",
	"access-key", "access_key", "accesskey", "private-key", "private_key",
	"credential", "auth", "cookie", "signature",
}

// isSecretName reports whether a flag, variable or parameter name (without
// leading dashes) names a credential.
func isSecretName(name string) bool {
	name = strings.ToLower(strings.TrimLeft(name, "-"))
	if name == "key" {
		return true
	}
	for _, w := range secretWords {
		if strings.Contains(name, w) {
			return true
		}
	}
	return false
}

var (
	// scheme://user:password@host -> scheme://user:REDACTED@host
	urlUserinfo = regexp.MustCompile(`([A-Za-z][A-Za-z0-9+.\-]*://[^/@\s:]*):[^@/\s]*@`)
	// scheme://token@host (a bare user part is often an access token)
	urlBareUser = regexp.MustCompile(`([A-Za-z][A-Za-z0-9+.\-]*://)[^/@\s:]+@`)
	// user:password@tcp(host)/db, the go-sql-driver/mysql DSN
	dsnUserinfo = regexp.MustCompile(`^([^:/@\s=]+):[^/@\s][^@\s]*@`)
	// ?token=...&x=1 inside URLs
	queryParam = regexp.MustCompile(`([?&;])([^=&;#\s]+)=([^&;#\s]*)`)
)

// Args joins a command line for display with credentials replaced:
// values of password-, token- and key-like flags (--password=x, --token x,
// TOKEN=x), passwords and bare tokens in URL userinfo, and secret-looking
// query parameters. Arguments with spaces are quoted.
func Args(args []string) string {
	out := make([]string, 0, len(args))
	redactNext := false
	for _, a := range args {
		switch {
		case redactNext:
			redactNext = false
			if !looksLikeFlag(a) {
				a = Redacted
			}
		case strings.HasPrefix(a, "-") && !strings.Contains(a, "="):
			// "--password secret": the value is the next argument.
			// A bare -p is not taken as a password flag: it is a port as often.
			redactNext = isSecretName(a)
		}
		out = append(out, quoteArg(redactString(a)))
	}
	return strings.Join(out, " ")
}

// looksLikeFlag tells a following flag ("--verbose", "-v") from a value that
// merely starts with a dash ("-42", "-s3cret!" is still a flag, a known gap).
func looksLikeFlag(a string) bool {
	if strings.HasPrefix(a, "--") && len(a) > 2 {
		return true
	}
	return len(a) > 1 && a[0] == '-' && (a[1] >= 'a' && a[1] <= 'z' || a[1] >= 'A' && a[1] <= 'Z')
}

// userinfo redacts the credentials of the URLs and DSNs in s: a URL's
// user and password, a bare user, a Go MySQL DSN's user:password@.
func userinfo(s string) string {
	s = urlUserinfo.ReplaceAllString(s, "${1}:"+Redacted+"@")
	s = urlBareUser.ReplaceAllStringFunc(s, func(m string) string {
		if strings.HasSuffix(m, "://"+Redacted+"@") {
			return m
		}
		i := strings.Index(m, "://")
		return m[:i+3] + Redacted + "@"
	})
	return dsnUserinfo.ReplaceAllString(s, "${1}:"+Redacted+"@")
}

// redactString redacts one argument or other free-standing string.
func redactString(s string) string {
	if s == Redacted {
		return s
	}
	if name, _, ok := strings.Cut(s, "="); ok && !strings.Contains(name, "://") && !strings.ContainsAny(name, "?&") && isSecretName(name) {
		return name + "=" + Redacted
	}
	s = userinfo(s)
	if strings.Contains(s, "?") {
		s = queryParam.ReplaceAllStringFunc(s, func(m string) string {
			sub := queryParam.FindStringSubmatch(m)
			if isSecretName(sub[2]) {
				return sub[1] + sub[2] + "=" + Redacted
			}
			return m
		})
	}
	return s
}

func quoteArg(a string) string {
	if a == "" || strings.ContainsAny(a, " \t\n\"'") {
		return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`, "\t", `\t`).Replace(a) + `"`
	}
	return a
}

// URL renders u for display (manifests, errors, logs) with its
// password and secret-looking query parameters replaced. The user name is
// kept unless there is no password, in which case it may itself be a token.
func URL(u *url.URL) string {
	if u == nil {
		return ""
	}
	c := *u
	if c.User != nil {
		if _, has := c.User.Password(); has {
			c.User = url.UserPassword(c.User.Username(), Redacted)
		} else {
			c.User = url.User(Redacted)
		}
	}
	if c.RawQuery != "" {
		q, err := url.ParseQuery(c.RawQuery)
		if err != nil {
			// Pairs that do not parse cannot be judged; show none of them.
			c.RawQuery = Redacted
			return c.String()
		}
		changed := false
		for k := range q {
			if isSecretName(k) {
				q[k] = []string{Redacted}
				changed = true
			}
		}
		if changed {
			c.RawQuery = q.Encode()
		}
	}
	return c.String()
}

// Property returns a configuration property's value (a Java system
// property, say) for display: replaced when the key names a credential,
// else with credentials inside it (URL userinfo, query tokens) replaced.
func Property(key, value string) string {
	if isSecretName(key) {
		return Redacted
	}
	return redactString(value)
}
