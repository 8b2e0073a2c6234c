package facts

import (
	"strings"
)

// SourceFile is a server's configuration file, as its command line named
// it (bundle.ConfigFiles): a my.cnf, a postgresql.conf, a PgBouncer ini,
// an nginx.conf.
const SourceFile = "configuration file"

// fileSetting is one setting of a configuration file as parsed.
type fileSetting struct {
	name, value string
	section     string // the section or block it is in ("mariadbd", "pgbouncer", "http server")
	line        int    // 1-based
	text        string // the line as written, trimmed, without its comment
}

// ParseConfigFile reads a configuration file's text in format (a
// bundle.ConfigFile.Format: "mysql", "postgresql", "ini", "redis",
// "nginx", "haproxy", "apache") into settings in the file's order, with
// Source SourceFile and File path. Lines it does not understand are left
// out; a format it does not know gives none.
func ParseConfigFile(format, path, text string) []Setting {
	var parsed []fileSetting
	switch format {
	case "mysql":
		parsed = parseINI(text, true)
	case "ini":
		parsed = parseINI(text, false)
	case "postgresql":
		parsed = parsePostgres(text)
	case "redis":
		parsed = parseWords(text, nil)
	case "haproxy":
		parsed = parseWords(text, haproxySection)
	case "apache":
		parsed = parseApache(text)
	case "nginx":
		parsed = parseNginx(text)
	}
	out := make([]Setting, 0, len(parsed))
	for _, p := range parsed {
		name := p.name
		if format == "mysql" {
			name = strings.ReplaceAll(name, "-", "_") // MySQL reads - and _ alike
		}
		out = append(out, Setting{Name: name, Key: SettingKey(name), Value: p.value, Source: SourceFile,
			File: path, Section: p.section, Line: p.line, Text: p.text})
	}
	return out
}

// lines calls f with each line's number and text, its comment (from a '#',
// or a ';' where semicolon says so, at the line's start or after a space)
// removed and trimmed; empty lines are skipped.
func lines(text string, semicolon bool, f func(n int, line string)) {
	for i, l := range strings.Split(text, "\n") {
		l = strings.TrimSpace(stripComment(l, semicolon))
		if l != "" {
			f(i+1, l)
		}
	}
}

// stripComment cuts a line at a comment that is not inside quotes.
func stripComment(l string, semicolon bool) string {
	var quote rune
	prev := ' '
	for i, r := range l {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			}
		case r == '"' || r == '\'':
			quote = r
		case r == '#' && (i == 0 || prev == ' ' || prev == '\t'):
			return l[:i]
		case semicolon && r == ';' && (i == 0 || prev == ' ' || prev == '\t'):
			return l[:i]
		}
		prev = r
	}
	return l
}

// unquote removes one pair of matching quotes around a value.
func unquote(v string) string {
	if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0] {
		return v[1 : len(v)-1]
	}
	return v
}

// mysqlServerGroups are the option groups MariaDB's and MySQL's servers
// read; the others ([client], [mysqldump]...) are other programs'.
func mysqlServerGroup(g string) bool {
	g = strings.ToLower(g)
	for _, p := range []string{"mysqld", "server", "mariadb", "mariadbd", "galera", "client-server"} {
		if g == p || strings.HasPrefix(g, p+"-") && g[len(p)+1] >= '0' && g[len(p)+1] <= '9' {
			return true
		}
	}
	return false
}

// parseINI reads key = value lines under [section] headers: PgBouncer's
// and php-fpm's files, and with mysql MariaDB's option files, where a key
// alone is a switch turned on, only the server's groups count, and a
// directive (!include) is no setting.
func parseINI(text string, mysql bool) []fileSetting {
	var out []fileSetting
	section := ""
	lines(text, true, func(n int, l string) {
		if strings.HasPrefix(l, "[") {
			if end := strings.IndexByte(l, ']'); end > 0 {
				section = strings.TrimSpace(l[1:end])
			}
			return
		}
		if mysql && (strings.HasPrefix(l, "!") || !mysqlServerGroup(section)) {
			return
		}
		name, value, ok := strings.Cut(l, "=")
		name = strings.TrimSpace(name)
		if name == "" || strings.ContainsAny(name, " \t") && !mysql {
			return
		}
		if !ok {
			if !mysql {
				return
			}
			value = "" // a switch: skip-name-resolve
		}
		out = append(out, fileSetting{name: name, value: unquote(strings.TrimSpace(value)), section: section, line: n, text: l})
	})
	return out
}

// parsePostgres reads postgresql.conf: name = value or name value, a
// value quoted with single quotes (” inside one), '#' comments.
func parsePostgres(text string) []fileSetting {
	var out []fileSetting
	lines(text, false, func(n int, l string) {
		i := strings.IndexAny(l, " \t=")
		if i <= 0 {
			return
		}
		name := l[:i]
		value := strings.TrimSpace(l[i:])
		value = strings.TrimSpace(strings.TrimPrefix(value, "="))
		if len(value) >= 2 && value[0] == '\'' && value[len(value)-1] == '\'' {
			value = strings.ReplaceAll(value[1:len(value)-1], "''", "'")
		}
		out = append(out, fileSetting{name: name, value: value, line: n, text: l})
	})
	return out
}

// haproxySection says whether a line opens one of HAProxy's sections.
func haproxySection(word string) bool {
	switch strings.ToLower(word) {
	case "global", "defaults", "frontend", "backend", "listen", "userlist", "peers", "resolvers", "mailers", "program", "http-errors", "ring", "cache":
		return true
	}
	return false
}

// parseWords reads "directive value..." lines (redis.conf; HAProxy's with
// section openers, whose following lines carry the section's name).
func parseWords(text string, opens func(string) bool) []fileSetting {
	var out []fileSetting
	section := ""
	lines(text, false, func(n int, l string) {
		fields := strings.Fields(l)
		if opens != nil && opens(fields[0]) {
			section = strings.Join(fields, " ")
			return
		}
		value := strings.TrimSpace(strings.TrimPrefix(l, fields[0]))
		out = append(out, fileSetting{name: fields[0], value: unquote(value), section: section, line: n, text: l})
	})
	return out
}

// parseApache reads Apache's directives; <Block args> ... </Block> gives
// the lines inside it their section.
func parseApache(text string) []fileSetting {
	var out []fileSetting
	var blocks []string
	lines(text, false, func(n int, l string) {
		if strings.HasPrefix(l, "</") {
			if len(blocks) > 0 {
				blocks = blocks[:len(blocks)-1]
			}
			return
		}
		if strings.HasPrefix(l, "<") && strings.HasSuffix(l, ">") {
			blocks = append(blocks, strings.TrimSpace(l[1:len(l)-1]))
			return
		}
		fields := strings.Fields(l)
		out = append(out, fileSetting{name: fields[0], value: unquote(strings.TrimSpace(strings.TrimPrefix(l, fields[0]))),
			section: strings.Join(blocks, " "), line: n, text: l})
	})
	return out
}

// parseNginx reads nginx's directives: words up to ';', blocks in braces
// giving the directives inside them their section ("http server"),
// quotes and '#' comments.
func parseNginx(text string) []fileSetting {
	var out []fileSetting
	var blocks []string
	var words []string
	line, start := 1, 0
	var word strings.Builder
	inWord := false
	flush := func() {
		if inWord {
			words = append(words, word.String())
			word.Reset()
			inWord = false
		}
	}
	for i := 0; i < len(text); i++ {
		c := text[i]
		switch {
		case c == '\n':
			flush()
			line++
		case c == '#' && !inWord:
			for i < len(text) && text[i] != '\n' {
				i++
			}
			i--
		case c == '"' || c == '\'':
			end := strings.IndexByte(text[i+1:], c)
			if end < 0 {
				end = len(text) - i - 1
			}
			if !inWord {
				start = line
			}
			word.WriteString(text[i+1 : i+1+end])
			line += strings.Count(text[i+1:i+1+end], "\n")
			inWord = true
			i += end + 1
		case c == ' ' || c == '\t' || c == '\r':
			flush()
		case c == ';' || c == '{':
			flush()
			if len(words) > 0 {
				if c == '{' {
					blocks = append(blocks, strings.Join(words, " "))
				} else {
					out = append(out, fileSetting{name: words[0], value: strings.Join(words[1:], " "),
						section: strings.Join(blocks, " "), line: start, text: strings.Join(words, " ") + ";"})
				}
			}
			words = nil
		case c == '}':
			flush()
			words = nil
			if len(blocks) > 0 {
				blocks = blocks[:len(blocks)-1]
			}
		default:
			if !inWord && len(words) == 0 {
				start = line
			}
			word.WriteByte(c)
			inWord = true
		}
	}
	return out
}
