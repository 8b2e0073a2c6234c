package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// registryURL matches a URL on a package registry's host: the words of
// the registries' domains, so this file names none of them.
var registryURL = regexp.MustCompile(`(?i)\b[a-z][a-z0-9+.-]*://[a-z0-9.-]*\b(maven|sonatype|jcenter|gradle|pypi|pythonhosted|npmjs|yarnpkg|crates|rubygems|nuget)\b[a-z0-9.-]*\.(org|com|io|net)\b`)

// Nothing in the repository downloads from a registry's host: jars come
// through Maven's own client (which honours the user's mirrors), Python
// packages through pip, Go modules through go; users name a file or a URL.
func TestNoRegistryHostInRepository(t *testing.T) {
	root, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		t.Skipf("skipped: not a git checkout: %v", err)
	}
	top := strings.TrimSpace(string(root))
	files, err := exec.Command("git", "-C", top, "ls-files", "-z").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range strings.Split(strings.TrimRight(string(files), "\x00"), "\x00") {
		if f == "go.sum" {
			continue
		}
		b, err := os.ReadFile(filepath.Join(top, f))
		if err != nil {
			continue // deleted in the work tree
		}
		if loc := findRegistryURL(b); loc != nil {
			line := strings.Count(string(b[:loc[0]]), "\n") + 1
			t.Errorf("%s:%d: a package registry's host: %s", f, line, b[loc[0]:loc[1]])
		}
	}
}

// findRegistryURL is registryURL.FindIndex(b), run only on the lines that
// hold "://": none of the pattern's classes matches a newline, so a match
// lies within a line and holds its "://", and a line's edges are word
// boundaries as the newlines there are. Over every file of the repository
// (12 MB, half of it recorded profiles) the pattern alone took 3 to 7 s.
func findRegistryURL(b []byte) []int {
	for from := 0; ; {
		i := bytes.Index(b[from:], []byte("://"))
		if i < 0 {
			return nil
		}
		i += from
		start := bytes.LastIndexByte(b[:i], '\n') + 1
		end := len(b)
		if j := bytes.IndexByte(b[i:], '\n'); j >= 0 {
			end = i + j
		}
		if loc := registryURL.FindIndex(b[start:end]); loc != nil {
			return []int{start + loc[0], start + loc[1]}
		}
		from = end
	}
}
