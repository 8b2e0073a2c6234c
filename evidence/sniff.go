package evidence

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"github.com/perfdoctor/perfdoctor/formats/goroutines"
	"io"
	"os"
	"regexp"
	"unicode/utf8"

	"github.com/perfdoctor/perfdoctor/formats/folded"
	"github.com/perfdoctor/perfdoctor/formats/perfscript"
)

// Sniffing accepts a format only on positive evidence of it: a magic
// number, a header the writing tool always prints, or content that parses.
// Anything else is skipped with a reason naming what it looks like, so a
// /proc copy or a log saved next to the profiles never becomes evidence.

type format int

const (
	formatUnknown format = iota
	formatEmpty
	formatProfile       // profile.proto, plain or gzipped
	formatLegacyProfile // google/pprof's legacy text and binary formats
	formatTrace
	formatMemStatsText
	formatJSON
	formatPerfScript
	formatFolded
	formatGoroutineDump // goroutine?debug=2
)

// gzipMagic starts every gzip stream.
var gzipMagic = []byte{0x1f, 0x8b}

func isGzip(data []byte) bool { return bytes.HasPrefix(data, gzipMagic) }

// gunzipped returns r decompressed when it starts as a gzip stream, else
// r as it is (buffered).
func gunzipped(r io.Reader) (io.Reader, error) {
	br := bufio.NewReader(r)
	if head, _ := br.Peek(2); isGzip(head) {
		return gzip.NewReader(br)
	}
	return br, nil
}

// readInput reads a file whole, decompressing it when gzipped, bounded by
// maxFileBytes. A gzip stream cut short keeps what was decompressed and
// says why in partial; a stream that yields nothing is an error.
func readInput(path string) (data []byte, partial string, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, "", err
	}
	defer f.Close()
	r, err := gunzipped(f)
	if err != nil {
		return nil, "", fmt.Errorf("not a valid profile: gzip header: %w", err)
	}
	_, gz := r.(*gzip.Reader)
	data, err = io.ReadAll(io.LimitReader(r, maxFileBytes+1))
	switch {
	case len(data) > maxFileBytes:
		return nil, "", fmt.Errorf("larger than %d MiB", maxFileBytes>>20)
	case err != nil && gz && len(data) > 0:
		return data, fmt.Sprintf("gzip stream cut short after %d bytes (%v)", len(data), err), nil
	case err != nil && gz:
		return nil, "", fmt.Errorf("not a valid profile: gzip stream: %w", err)
	case err != nil:
		return nil, "", err
	}
	return data, "", nil
}

// sniff names the format of decompressed data, from the most specific
// evidence to the least. JFR recordings never get here: read recognises
// them first and streams them.
func sniff(data []byte) format {
	switch {
	case len(data) == 0:
		return formatEmpty
	case bytes.HasPrefix(data, []byte("go 1.")) && bytes.Contains(data[:min(len(data), 32)], []byte(" trace")):
		return formatTrace
	case bytes.HasPrefix(data, []byte("heap profile:")) && bytes.Contains(data, []byte("\n# runtime.MemStats\n")):
		// Go's heap?debug=1: the statistics are what a profile lacks.
		return formatMemStatsText
	case isLegacyProfile(data):
		return formatLegacyProfile
	case isJSONObject(data):
		return formatJSON
	case goroutines.Looks(data):
		return formatGoroutineDump
	case perfscript.Looks(data):
		return formatPerfScript
	case folded.Sniff(data[:min(len(data), 64<<10)]):
		return formatFolded
	case foreignBinary(data) != "":
		return formatUnknown
	case looksLikeProto(data):
		return formatProfile
	}
	return formatUnknown
}

func isJSONObject(data []byte) bool {
	trimmed := bytes.TrimLeft(data, " \t\r\n")
	return len(trimmed) > 0 && trimmed[0] == '{'
}

// looksLikeProto accepts what may be an uncompressed profile.proto: binary
// data (not text) whose first byte is the tag of a Profile field (1 to 14,
// varint or length-delimited; writers order fields freely, Go's runtime
// starts with period_type). The profile is only taken if it also parses.
func looksLikeProto(data []byte) bool {
	if len(data) < 2 || isText(data[:min(len(data), 512)]) {
		return false
	}
	field, wire := data[0]>>3, data[0]&7
	return field >= 1 && field <= 14 && (wire == 0 || wire == 2)
}

// isText reports whether data is printable UTF-8 text with only tab, CR
// and LF for control characters (a multi-byte character cut at the end
// is allowed).
func isText(data []byte) bool {
	for i := 0; i < len(data); {
		r, size := utf8.DecodeRune(data[i:])
		if r == utf8.RuneError && size <= 1 {
			return len(data)-i < utf8.UTFMax && !utf8.FullRune(data[i:])
		}
		if r < 0x20 && r != '\t' && r != '\n' && r != '\r' || r == 0x7f {
			return false
		}
		i += size
	}
	return true
}

// legacyTextHeader matches the first line of the legacy text profiles
// google/pprof's profile.Parse reads: heap, growth and fragmentation
// (gperftools, Go's debug=1), contention (C++ and Go's debug=1 mutex and
// block), threadz, Java's, and Go's debug=1 count profiles ("goroutine
// profile: total 12", threadcreate).
var legacyTextHeader = regexp.MustCompile(`\A(?:heap profile: *\d+: *\d+ *\[ *\d+: *\d+ *\] *@|--- (?:contentionz? |contention:|mutex:|threadz \d+ ---|Thread [[:xdigit:]]+ \(name: |heapz 1 ---|contentionz 1 ---|cpu 1 ---)|\S+ profile: total \d+\r?\n)`)

// isLegacyProfile recognises the legacy formats by their header: the text
// ones above and the binary CPU profile of gperftools (and Java's), whose
// header is the words 0, 3 (header words), 0 or 1 (version), the period,
// 0, in 32- or 64-bit words of either byte order, as profile.Parse tries.
func isLegacyProfile(data []byte) bool {
	if legacyTextHeader.Match(data[:min(len(data), 256)]) {
		return true
	}
	for _, w := range []int{4, 8} {
		for _, order := range []binary.ByteOrder{binary.LittleEndian, binary.BigEndian} {
			if len(data) < 5*w {
				continue
			}
			word := func(i int) uint64 {
				if w == 8 {
					return order.Uint64(data[i*8:])
				}
				return uint64(order.Uint32(data[i*4:]))
			}
			if word(0) == 0 && word(1) == 3 && word(2) <= 1 && word(3) > 0 && word(4) == 0 {
				return true
			}
		}
	}
	return false
}

// errUnknown marks content that is not any format perfdoctor reads.
var errUnknown = errors.New("not a format perfdoctor reads")

// unknownReason says what skipped content looks like, so the user knows
// why a file was passed over without reading its content back to them
// (which may hold secrets).
func unknownReason(data []byte) error {
	head := data[:min(len(data), 4096)]
	trimmed := bytes.TrimLeft(head, " \t\r\n\ufeff")
	lower := bytes.ToLower(trimmed[:min(len(trimmed), 64)])
	what := foreignBinary(head)
	switch {
	case what != "":
	case bytes.HasPrefix(lower, []byte("<!doctype html")), bytes.HasPrefix(lower, []byte("<html")):
		what = "an HTML page (a server's error or index page?)"
	case bytes.HasPrefix(lower, []byte("<?xml")), bytes.HasPrefix(lower, []byte("<")):
		what = "XML or HTML"
	case bytes.HasPrefix(trimmed, []byte("[")):
		what = "a JSON array"
	case gctraceLine.Match(head):
		what = "a GODEBUG=gctrace=1 log: give it with --gctrace"
	case goroutineDump.Match(head):
		what = "a goroutine dump (debug=2 text), which is not read: save /debug/pprof/goroutine without debug=2"
	case !isText(head):
		what = "binary data"
	case looksCSV(head):
		what = "CSV text"
	case looksKeyValue(head):
		what = `"name value" text without stacks (a /proc file?)`
	default:
		what = "text that is no profile, trace or log perfdoctor reads"
	}
	return fmt.Errorf("%w: %s", errUnknown, what)
}

// foreignBinary names the binary formats of other tools by their magic
// number, or returns "".
func foreignBinary(head []byte) string {
	for _, m := range []struct{ magic, what string }{
		{"\x7fELF", "an ELF executable or library"},
		{"PK\x03\x04", "a zip archive (a jar?); unpack it first"},
		{"\x89PNG", "an image"}, {"GIF8", "an image"}, {"\xff\xd8\xff", "an image"},
		{"%PDF", "a PDF document"},
		{"PERFILE2", "a perf.data file; convert it with `perf script` first"},
		{"SQLite format 3\x00", "an SQLite database"},
		{"\x28\xb5\x2f\xfd", "zstd-compressed data; decompress it first"},
		{"BZh", "bzip2-compressed data; decompress it first"},
		{"\xfd7zXZ\x00", "xz-compressed data; decompress it first"},
	} {
		if bytes.HasPrefix(head, []byte(m.magic)) {
			return m.what
		}
	}
	return ""
}

// firstLines returns up to n complete non-empty lines of head.
func firstLines(head []byte, n int) [][]byte {
	var out [][]byte
	lines := bytes.Split(head, []byte("\n"))
	if len(lines) > 1 {
		lines = lines[:len(lines)-1]
	}
	for _, l := range lines {
		if l = bytes.TrimRight(l, "\r"); len(bytes.TrimSpace(l)) > 0 {
			out = append(out, l)
			if len(out) == n {
				break
			}
		}
	}
	return out
}

func looksCSV(head []byte) bool {
	lines := firstLines(head, 5)
	if len(lines) < 2 {
		return false
	}
	commas := bytes.Count(lines[0], []byte(","))
	for _, l := range lines {
		if c := bytes.Count(l, []byte(",")); c == 0 || c != commas {
			return false
		}
	}
	return true
}

var (
	gctraceLine   = regexp.MustCompile(`(?m)^gc \d+ @\d`)
	goroutineDump = regexp.MustCompile(`\Agoroutine \d+ \[`)
)

var keyValueLine = regexp.MustCompile(`^[\w()./-]+:?\s+-?\d+(?:\s+-?\d+)*(?:\s*kB)?$`)

func looksKeyValue(head []byte) bool {
	lines := firstLines(head, 8)
	for _, l := range lines {
		if !keyValueLine.Match(l) {
			return false
		}
	}
	return len(lines) > 0
}
