package redact

import (
	"regexp"
	"strings"
)

// configWord is a name in a configuration line: a key, a directive, a
// word of a value.
var configWord = regexp.MustCompile(`[A-Za-z0-9_.\-]+`)

// addressDirectives are nginx's directives whose value is an upstream's
// address, not a credential, though their names hold "pass"; a URL in
// them still has its userinfo redacted.
var addressDirectives = map[string]bool{
	"proxy_pass": true, "fastcgi_pass": true, "uwsgi_pass": true, "scgi_pass": true,
	"grpc_pass": true, "memcached_pass": true,
}

// ConfigText returns a configuration file's text (a my.cnf, a
// postgresql.conf, an nginx.conf, a PgBouncer ini...) with credentials
// replaced, line by line, and how many lines it changed. On a line, the
// first word that names a credential (password, auth, secret, token, key...,
// as the command line's flags are judged) keeps its name and loses
// everything after it up to the line's end (a closing ';' stays):
// "requirepass x", "password = x", "user admin password x",
// "proxy_set_header Authorization x;", a libpq connection string's
// "password=x", comments alike. URLs and DSNs lose their userinfo. Over-redacting
// a harmless value costs little, leaking one a lot.
func ConfigText(text string) (string, int) {
	lines := strings.SplitAfter(text, "\n")
	n := 0
	for i, l := range lines {
		if r := configLine(l); r != l {
			lines[i] = r
			n++
		}
	}
	return strings.Join(lines, ""), n
}

func configLine(line string) string {
	body := strings.TrimRight(line, "\r\n")
	eol := line[len(body):]
	// What stays at the end: nginx's ';'.
	end := len(strings.TrimRight(body, " \t;"))
	for _, w := range configWord.FindAllStringIndex(body, -1) {
		word := body[w[0]:w[1]]
		if addressDirectives[strings.ToLower(word)] || !isSecretName(word) {
			continue
		}
		j := w[1]
		for j < end && strings.ContainsRune(" \t=:", rune(body[j])) {
			j++
		}
		if j >= end {
			continue // a key alone, or a word at the line's end
		}
		tail := ""
		if strings.HasSuffix(strings.TrimRight(body, " \t"), ";") {
			tail = ";"
		}
		return body[:j] + Redacted + tail + eol
	}
	return userinfo(body) + eol
}
