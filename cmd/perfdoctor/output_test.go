//go:build linux

package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/perfdoctor/perfdoctor/internal/output/outputtest"
)

// TestOutputDestinations runs every command that writes a report, export
// or profile to -o FILE against each kind of destination: what was at the
// path is replaced whole, written through or refused, never destroyed.
func TestOutputDestinations(t *testing.T) {
	in := t.TempDir()
	before := writeProfile(t, in, "before.pb.gz", gcHeavy(100))
	after := writeProfile(t, in, "after.pb.gz", gcHeavy(500))
	commands := map[string][]string{
		"export":   {"export", after, "--format", "pprof"},
		"diagnose": {"diagnose", after, "--format", "json"},
		"diff":     {"diff", before, after},
		"pgo":      {"pgo", before, after},
	}
	asNobody := outputtest.Nobody(t, in, asCLI+"=1")
	for name, args := range commands {
		t.Run(name, func(t *testing.T) {
			run := func(out string) (int, string, string) {
				return perfdoctor(t, append(slices.Clip(args), "-o", out)...)
			}
			// -o - is standard output, and what the other cases must write.
			code, want, stderr := run("-")
			if code != exitOK || want == "" {
				t.Fatalf("-o -: exit %d, %d bytes on stdout, stderr %q", code, len(want), stderr)
			}
			dir := t.TempDir()
			wantFile := func(path string) {
				t.Helper()
				if b, err := os.ReadFile(path); err != nil || string(b) != string(want) {
					t.Errorf("%s: %d bytes (%v), want the %d that -o - writes", path, len(b), err, len(want))
				}
			}
			ok := func(path string) {
				t.Helper()
				if code, _, stderr := run(path); code != exitOK {
					t.Fatalf("-o %s: exit %d: %s", path, code, stderr)
				}
			}

			t.Run("new file", func(t *testing.T) {
				path := filepath.Join(dir, "new")
				ok(path)
				wantFile(path)
				if fi, _ := os.Stat(path); fi.Mode() != 0o644&^outputtest.Umask() {
					t.Errorf("new file's mode %v, want -rw-r--r-- less the umask", fi.Mode())
				}
			})

			t.Run("regular file", func(t *testing.T) {
				path := filepath.Join(dir, "old")
				os.WriteFile(path, []byte("an old report that is longer than nothing"), 0o640)
				os.Chmod(path, 0o640)
				old, _ := os.Stat(path)
				ok(path)
				wantFile(path)
				fi, _ := os.Stat(path)
				if fi.Mode() != 0o640 {
					t.Errorf("replaced file's mode %v, want its old -rw-r-----", fi.Mode())
				}
				if os.SameFile(old, fi) {
					t.Error("the file was rewritten in place, not renamed over")
				}
			})

			t.Run("symlink", func(t *testing.T) {
				target := filepath.Join(dir, "target")
				os.WriteFile(target, []byte("old"), 0o644)
				link := filepath.Join(dir, "link")
				os.Symlink("target", link)
				ok(link)
				wantFile(target)
				if got, err := os.Readlink(link); err != nil || got != "target" {
					t.Errorf("the link now reads %q (%v), want it left a link to target", got, err)
				}
			})

			t.Run("null device", func(t *testing.T) {
				null := outputtest.NullDevice(t)
				fi, _ := os.Stat(null)
				ok(null)
				now, err := os.Stat(null)
				if err != nil || now.Mode() != fi.Mode() || !os.SameFile(fi, now) {
					t.Errorf("%s was %v, is now %v (%v): replaced", null, fi.Mode(), now.Mode(), err)
				}
			})

			t.Run("fifo", func(t *testing.T) {
				fifo, got := outputtest.FIFO(t)
				ok(fifo)
				if fi, err := os.Lstat(fifo); err != nil || fi.Mode()&fs.ModeNamedPipe == 0 {
					t.Fatalf("the FIFO is now %v (%v)", fi.Mode(), err)
				}
				if s := <-got; s != want {
					t.Errorf("the reader got %d bytes, want %d", len(s), len(want))
				}
			})

			t.Run("refused", func(t *testing.T) {
				bad := t.TempDir()
				os.Mkdir(filepath.Join(bad, "reports"), 0o755)
				for path, why := range map[string]string{
					filepath.Join(bad, "reports"):           "writing " + filepath.Join(bad, "reports") + ": is a directory, not a file",
					filepath.Join(bad, "missing", "r.txt"):  "writing " + filepath.Join(bad, "missing", "r.txt") + ": folder " + filepath.Join(bad, "missing") + " does not exist",
					filepath.Join(bad, "reports", "x", "y"): "does not exist",
				} {
					code, stdout, stderr := run(path)
					wantOneLineError(t, code, stderr, why)
					if code != exitError || stdout != "" {
						t.Errorf("-o %s: exit %d, stdout %q", path, code, stdout)
					}
				}
				if n := outputtest.Names(t, bad); !slices.Equal(n, []string{"reports"}) {
					t.Errorf("left behind: %v", n)
				}
				if n := outputtest.Names(t, filepath.Join(bad, "reports")); len(n) != 0 {
					t.Errorf("left in the refused directory: %v", n)
				}
			})

			t.Run("read-only folder", func(t *testing.T) {
				ro := filepath.Join(in, name+"-ro")
				os.Mkdir(ro, 0o555)
				os.Chmod(ro, 0o555)
				defer os.Chmod(ro, 0o755)
				var code int
				var stderr string
				if asNobody == nil {
					code, _, stderr = run(filepath.Join(ro, "r"))
				} else {
					// Root writes anywhere: the folder is nobody's, and nobody runs the command.
					os.Chown(ro, 65534, 65534)
					code, stderr = asNobody(append(slices.Clip(args), "-o", filepath.Join(ro, "r"))...)
				}
				wantOneLineError(t, code, stderr, "writing "+filepath.Join(ro, "r")+": folder "+ro+" is not writable (permission denied)")
				if n := outputtest.Names(t, ro); len(n) != 0 {
					t.Errorf("left behind: %v", n)
				}
			})

			if n := outputtest.Names(t, dir); slices.ContainsFunc(n, func(s string) bool { return strings.HasPrefix(s, ".") }) {
				t.Errorf("temporary files left behind: %v", n)
			}
		})
	}
}

// TestLoadOutputRefusedBeforeTheRun: a bad -o fails before minutes of
// load, not after them.
func TestLoadOutputRefusedBeforeTheRun(t *testing.T) {
	dir := t.TempDir()
	code, _, stderr := perfdoctor(t, "load", "http://"+closedPort(t)+"/", "-d", "1s", "-o", dir)
	wantOneLineError(t, code, stderr, "writing "+dir+": is a directory, not a file")
	if strings.Contains(stderr, "refused") {
		t.Errorf("load ran before refusing -o: %s", stderr)
	}
}

func TestBundleOutputDestinations(t *testing.T) {
	dir := t.TempDir()
	null := outputtest.NullDevice(t)
	file := filepath.Join(dir, "file")
	os.WriteFile(file, []byte("kept"), 0o644)
	for out, why := range map[string]string{
		null: "output directory " + null + " exists and is not a directory",
		file: "output directory " + file + " exists and is not a directory",
		"-":  "a bundle is a directory; it cannot go to standard output",
	} {
		code, _, stderr := perfdoctor(t, "collect", "http://"+closedPort(t), "-d", "1s", "-o", out)
		wantOneLineError(t, code, stderr, why)
	}
	if fi, err := os.Stat(null); err != nil || fi.Mode()&fs.ModeCharDevice == 0 {
		t.Errorf("%s is now %v (%v)", null, fi.Mode(), err)
	}
	if b, _ := os.ReadFile(file); string(b) != "kept" {
		t.Errorf("file holds %q", b)
	}
}
