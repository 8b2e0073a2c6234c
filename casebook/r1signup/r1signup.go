// Package r1signup is a service with two problems at once, for the ranking:
// a sign-up validator that compiles its regular expressions on every request
// (the bigger cost) and builds its audit record and answer with fmt (the
// smaller one). The bad variant's first finding must be the regexp
// compilation, with the formatting also among the first three; the fixed
// variant fixes both.
//
// Each request validates one of a few hundred recorded sign-ups (email,
// phone, user name, postcode, referral code) and answers with the verdict
// and an audit line.
//
//   - Bad: regexp.MatchString(pattern, value) for the three fields checked
//     by pattern, which compiles the pattern on every call; the audit line
//     and the per-check lines of the answer are fmt.Sprintf calls (about a
//     dozen per request, %q and %+v among them). In a CPU profile of the
//     handler alone (go test -bench Validate/bad -cpuprofile), regexp
//     compilation is about 40% and fmt about 27%: the regexps clearly
//     first, the formatting clearly second.
//   - Fixed: the patterns compiled once at start-up (a *regexp.Regexp is
//     safe for concurrent use); the same bytes appended with strconv.
//
// This is "any Go service": it imports nothing from perfdoctor.
package r1signup

import (
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
)

// Variants.
const (
	Bad   = "bad"
	Fixed = "fixed"
)

// field is one validated input: its name, and either the pattern it must
// match or a hand-written check.
type field struct {
	name, pattern string
	check         func(string) bool
}

// fields are the sign-up form's checks, in the order they are reported.
var fields = []field{
	{name: "email", pattern: `^[a-z0-9._%+\-]+@[a-z0-9\-]+(\.[a-z0-9\-]+)*\.[a-z]+$`},
	{name: "phone", check: phoneOK},
	{name: "username", pattern: `^[a-zA-Z][a-zA-Z0-9_]+$`},
	{name: "postcode", check: func(v string) bool { return len(v) >= 5 && len(v) <= 10 }},
	{name: "referral", pattern: `^(REF|PROMO|FRIEND)-[A-Z0-9]+(-[0-9]+)?$`},
}

func phoneOK(v string) bool {
	digits := 0
	for i := 0; i < len(v); i++ {
		switch b := v[i]; {
		case b >= '0' && b <= '9':
			digits++
		case b == '+' && i == 0, b == ' ', b == '-', b == '(', b == ')':
		default:
			return false
		}
	}
	return digits >= 7 && digits <= 15
}

// signup is one recorded form submission, values in the order of fields.
type signup struct {
	id     int
	values [5]string
}

// Handler is the validator.
type Handler struct {
	variant string
	signups []signup
	seq     atomic.Uint64
	res     []*regexp.Regexp // fixed: compiled once
}

// NewHandler returns the variant's handler.
func NewHandler(variant string) (*Handler, error) {
	if variant != Bad && variant != Fixed {
		return nil, fmt.Errorf("r1signup: unknown variant %q (want %q or %q)", variant, Bad, Fixed)
	}
	h := &Handler{variant: variant, signups: recorded(256)}
	if variant == Fixed {
		h.res = make([]*regexp.Regexp, len(fields))
		for i, f := range fields {
			if f.pattern != "" {
				h.res[i] = regexp.MustCompile(f.pattern)
			}
		}
	}
	return h, nil
}

// recorded makes n sign-ups, a few of them invalid in one field.
func recorded(n int) []signup {
	out := make([]signup, n)
	for i := range out {
		s := signup{id: 100000 + i, values: [5]string{
			"user." + strconv.Itoa(i) + "@mail" + strconv.Itoa(i%7) + ".example.com",
			"+44 (020) " + strconv.Itoa(7000+i%3000) + " " + strconv.Itoa(1000+i%9000),
			"member_" + strconv.Itoa(i*7919%100000),
			[]string{"SW1A 1AA", "EC1A 1BB", "94103", "10001-1234"}[i%4],
			"REF-" + strings.ToUpper(strconv.FormatInt(int64(i*104729+4096), 36)),
		}}
		if i%9 == 0 {
			s.values[i%5] = "not valid!"
		}
		out[i] = s
	}
	return out
}

// ServeHTTP validates the next recorded sign-up.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s := &h.signups[h.seq.Add(1)%uint64(len(h.signups))]
	var out []byte
	if h.variant == Bad {
		out = h.validateBad(s)
	} else {
		out = h.validateFixed(s)
	}
	w.Header().Set("Content-Type", "text/plain")
	w.Write(out)
}

// validateBad compiles each pattern for this request and formats with fmt.
func (h *Handler) validateBad(s *signup) []byte {
	valid := 0
	var audit []string
	for i, f := range fields {
		var ok bool
		if f.pattern != "" {
			ok, _ = regexp.MatchString(f.pattern, s.values[i]) // compiles the pattern every time
		} else {
			ok = f.check(s.values[i])
		}
		if ok {
			valid++
		}
		audit = append(audit, fmt.Sprintf("%s=%q ok=%t len=%d chars=%+v", f.name, s.values[i], ok, len(s.values[i]), count(s.values[i])))
	}
	line := fmt.Sprintf("signup id=%d valid=%d/%d %s", s.id, valid, len(fields), strings.Join(audit, " "))
	out := fmt.Sprintf("%s\nverdict=%s checks=%d audit_len=%d\n", line, verdict(valid), len(fields), len(line))
	for i, f := range fields {
		v := s.values[i]
		out += fmt.Sprintf("check %d/%d field=%s rule=%q value=%q chars=%+v\n", i+1, len(fields), f.name, rule(f), v, count(v))
	}
	return []byte(out)
}

// validateFixed matches with the patterns compiled at start-up and appends
// the same text with strconv.
func (h *Handler) validateFixed(s *signup) []byte {
	line := make([]byte, 0, 512)
	valid := 0
	var ok [len(signup{}.values)]bool
	for i := range fields {
		if ok[i] = h.match(i, s.values[i]); ok[i] {
			valid++
		}
	}
	line = append(line, "signup id="...)
	line = strconv.AppendInt(line, int64(s.id), 10)
	line = append(line, " valid="...)
	line = strconv.AppendInt(line, int64(valid), 10)
	line = append(line, '/')
	line = strconv.AppendInt(line, int64(len(fields)), 10)
	for i, f := range fields {
		v := s.values[i]
		line = append(line, ' ')
		line = append(line, f.name...)
		line = append(line, '=')
		line = strconv.AppendQuote(line, v)
		line = append(line, " ok="...)
		line = strconv.AppendBool(line, ok[i])
		line = append(line, " len="...)
		line = strconv.AppendInt(line, int64(len(v)), 10)
		line = append(line, " chars="...)
		line = count(v).append(line)
	}
	n := len(line)
	line = append(line, "\nverdict="...)
	line = append(line, verdict(valid)...)
	line = append(line, " checks="...)
	line = strconv.AppendInt(line, int64(len(fields)), 10)
	line = append(line, " audit_len="...)
	line = strconv.AppendInt(line, int64(n), 10)
	line = append(line, '\n')
	for i, f := range fields {
		v := s.values[i]
		line = append(line, "check "...)
		line = strconv.AppendInt(line, int64(i+1), 10)
		line = append(line, '/')
		line = strconv.AppendInt(line, int64(len(fields)), 10)
		line = append(line, " field="...)
		line = append(line, f.name...)
		line = append(line, " rule="...)
		line = strconv.AppendQuote(line, rule(f))
		line = append(line, " value="...)
		line = strconv.AppendQuote(line, v)
		line = append(line, " chars="...)
		line = count(v).append(line)
		line = append(line, '\n')
	}
	return line
}

// match validates field i with its compiled pattern or its check.
func (h *Handler) match(i int, v string) bool {
	if re := h.res[i]; re != nil {
		return re.MatchString(v)
	}
	return fields[i].check(v)
}

// chars counts a value's characters by kind, for the audit trail.
type chars struct {
	Digits, Letters, Upper, Other int
}

func count(v string) chars {
	var c chars
	for i := 0; i < len(v); i++ {
		switch b := v[i]; {
		case b >= '0' && b <= '9':
			c.Digits++
		case b >= 'A' && b <= 'Z':
			c.Upper++
			c.Letters++
		case b >= 'a' && b <= 'z':
			c.Letters++
		default:
			c.Other++
		}
	}
	return c
}

// append writes c as fmt's %+v does: {Digits:1 Letters:2 Upper:0 Other:3}.
func (c chars) append(b []byte) []byte {
	b = append(b, "{Digits:"...)
	b = strconv.AppendInt(b, int64(c.Digits), 10)
	b = append(b, " Letters:"...)
	b = strconv.AppendInt(b, int64(c.Letters), 10)
	b = append(b, " Upper:"...)
	b = strconv.AppendInt(b, int64(c.Upper), 10)
	b = append(b, " Other:"...)
	b = strconv.AppendInt(b, int64(c.Other), 10)
	return append(b, '}')
}

// rule names a field's check in the audit: its pattern, or "builtin".
func rule(f field) string {
	if f.pattern != "" {
		return f.pattern
	}
	return "builtin"
}

func verdict(valid int) string {
	if valid == len(fields) {
		return "accept"
	}
	return "reject"
}
