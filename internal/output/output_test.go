//go:build linux

package output

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/perfdoctor/perfdoctor/internal/output/outputtest"
)

// TestMain lets a test run this binary again as a child that writes one
// file (as another user, or with its standard output on a socket).
func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "1" {
		// As perfdoctor's main does: the first Ctrl-C stops the work, not the process.
		signal.Notify(make(chan os.Signal, 1), os.Interrupt)
		if os.Getenv(readyEnv) != "" {
			// The parent may interrupt from now on: before Notify, an
			// interrupt ends the process as a shell's Ctrl-C would.
			ready := os.NewFile(3, "ready")
			ready.Write([]byte{1})
			ready.Close()
		}
		os.Exit(child(os.Args[1]))
	}
	os.Exit(m.Run())
}

const (
	childEnv = "PERFDOCTOR_OUTPUT_CHILD"
	// readyEnv asks the child to write a byte to its descriptor 3 once its
	// interrupt handler is in place.
	readyEnv = "PERFDOCTOR_OUTPUT_CHILD_READY"
)

// child writes "from the child\n" to path (its first argument) with Check first, the way a
// command does, and prints the error as the CLI would.
func child(path string) int {
	err := Check(path)
	if err == nil {
		err = Write(path, os.Stdout, Shared, func(w io.Writer) error {
			_, err := io.WriteString(w, "from the child\n")
			return err
		})
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

func text(s string) func(io.Writer) error {
	return func(w io.Writer) error {
		_, err := io.WriteString(w, s)
		return err
	}
}

func wantContent(t *testing.T, path, want string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != want {
		t.Errorf("%s holds %q, want %q", path, b, want)
	}
}

func inode(t *testing.T, path string) uint64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Sys().(*syscall.Stat_t).Ino
}

func TestNewFile(t *testing.T) {
	dir := t.TempDir()
	for _, perm := range []fs.FileMode{Shared, Private} {
		path := filepath.Join(dir, fmt.Sprintf("report-%o.txt", perm))
		if err := Write(path, nil, perm, text("new\n")); err != nil {
			t.Fatal(err)
		}
		wantContent(t, path, "new\n")
		fi, _ := os.Stat(path)
		if got, want := fi.Mode(), perm&^outputtest.Umask(); got != want {
			t.Errorf("new file's mode %v, want %v (%v less the umask)", got, want, perm)
		}
	}
	if n := outputtest.Names(t, dir); len(n) != 2 {
		t.Errorf("folder holds %v, want the two reports alone", n)
	}
}

func TestRegularFileReplacedKeepingMode(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "report.txt")
	if err := os.WriteFile(path, []byte("old\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	os.Chmod(path, 0o640) // whatever the umask
	root := os.Geteuid() == 0
	if root {
		if err := os.Chown(path, 65534, 65534); err != nil {
			t.Fatal(err)
		}
	}
	before := inode(t, path)
	if err := Write(path, nil, Shared, text("new\n")); err != nil {
		t.Fatal(err)
	}
	wantContent(t, path, "new\n")
	fi, _ := os.Stat(path)
	if fi.Mode() != 0o640 {
		t.Errorf("mode %v after replacing, want the old file's -rw-r-----", fi.Mode())
	}
	if root {
		if st := fi.Sys().(*syscall.Stat_t); st.Uid != 65534 || st.Gid != 65534 {
			t.Errorf("owner %d:%d after replacing as root, want the old file's 65534:65534", st.Uid, st.Gid)
		}
	}
	// A new inode: the file was renamed into place, not rewritten where a
	// reader could see half of it.
	if inode(t, path) == before {
		t.Error("the file was written in place, not renamed over")
	}
	if n := outputtest.Names(t, dir); len(n) != 1 {
		t.Errorf("folder holds %v, want the report alone", n)
	}
}

func TestFailedWriteKeepsOldFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "report.txt")
	os.WriteFile(path, []byte("old\n"), 0o644)
	broken := errors.New("renderer failed")
	err := Write(path, nil, Shared, func(w io.Writer) error {
		io.WriteString(w, strings.Repeat("half a report\n", 10000)) // past the buffer: on disk
		return broken
	})
	if !errors.Is(err, broken) {
		t.Fatalf("err = %v, want the renderer's", err)
	}
	wantContent(t, path, "old\n")
	if n := outputtest.Names(t, dir); len(n) != 1 {
		t.Errorf("folder holds %v after a failed write, want the old report alone", n)
	}
}

func TestSymlinkTargetWrittenLinkKept(t *testing.T) {
	dir := t.TempDir()
	os.Mkdir(filepath.Join(dir, "real"), 0o755)
	target := filepath.Join(dir, "real", "report.txt")
	os.WriteFile(target, []byte("old\n"), 0o600)
	os.Chmod(target, 0o600)
	// A chain of two relative links, the second through a linked folder.
	os.Symlink("real", filepath.Join(dir, "alias"))
	os.Symlink("alias/report.txt", filepath.Join(dir, "second"))
	link := filepath.Join(dir, "first")
	os.Symlink("second", link)

	if err := Write(link, nil, Shared, text("new\n")); err != nil {
		t.Fatal(err)
	}
	wantContent(t, target, "new\n")
	for name, want := range map[string]string{"first": "second", "second": "alias/report.txt", "alias": "real"} {
		if got, err := os.Readlink(filepath.Join(dir, name)); err != nil || got != want {
			t.Errorf("%s: link to %q (%v), want it left a link to %q", name, got, err, want)
		}
	}
	if fi, _ := os.Stat(target); fi.Mode() != 0o600 {
		t.Errorf("target's mode %v, want its own -rw-------", fi.Mode())
	}
	if n := outputtest.Names(t, filepath.Join(dir, "real")); len(n) != 1 {
		t.Errorf("target's folder holds %v, want the report alone", n)
	}
}

func TestDanglingSymlinkCreatesTarget(t *testing.T) {
	dir := t.TempDir()
	link := filepath.Join(dir, "latest.json")
	os.Symlink("runs/7.json", link)
	os.Mkdir(filepath.Join(dir, "runs"), 0o755)
	if err := Write(link, nil, Shared, text("{}\n")); err != nil {
		t.Fatal(err)
	}
	wantContent(t, filepath.Join(dir, "runs", "7.json"), "{}\n")
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		t.Errorf("latest.json is no longer a link: %v %v", fi.Mode(), err)
	}
}

func TestDeviceWrittenThrough(t *testing.T) {
	null := outputtest.NullDevice(t)
	before, err := os.Stat(null)
	if err != nil {
		t.Fatal(err)
	}
	if err := Write(null, nil, Shared, text(strings.Repeat("into the void\n", 10000))); err != nil {
		t.Fatal(err)
	}
	if err := Check(null); err != nil {
		t.Errorf("Check(%s) = %v", null, err)
	}
	after, err := os.Stat(null)
	if err != nil {
		t.Fatal(err)
	}
	if after.Mode() != before.Mode() || !os.SameFile(before, after) {
		t.Errorf("%s was %v, is now %v: replaced", null, before.Mode(), after.Mode())
	}
	if n := outputtest.Names(t, filepath.Dir(null)); filepath.Dir(null) != "/dev" && len(n) != 1 {
		t.Errorf("device's folder holds %v, want the device alone", n)
	}
}

func TestFIFOWrittenThrough(t *testing.T) {
	want := strings.Repeat("through the pipe\n", 20000) // more than a pipe holds
	fifo, got := outputtest.FIFO(t)
	if err := Check(fifo); err != nil { // without waiting for a reader
		t.Fatalf("Check(fifo) = %v", err)
	}
	if err := Write(fifo, nil, Shared, text(want)); err != nil {
		t.Fatal(err)
	}
	// First, so a FIFO replaced fails here rather than leaving the reader waiting.
	if fi, err := os.Lstat(fifo); err != nil || fi.Mode()&fs.ModeNamedPipe == 0 {
		t.Fatalf("the FIFO is now %v (%v)", fi.Mode(), err)
	}
	if s := <-got; s != want {
		t.Errorf("the reader got %d bytes, want %d", len(s), len(want))
	}
}

// TestFIFOWithoutReaderInterrupted: Ctrl-C ends the wait for a reader that
// never comes, with one line, and leaves the FIFO.
func TestFIFOWithoutReaderInterrupted(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "pipe")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], fifo)
	cmd.Env = append(os.Environ(), childEnv+"=1", readyEnv+"=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	readyR, readyW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer readyR.Close()
	cmd.ExtraFiles = []*os.File{readyW}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	readyW.Close()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	// Interrupts only once the child handles them (a busy machine started
	// it too slowly for the first ones); those before the wait began are
	// taken as the command's first Ctrl-C, and one lands during the wait.
	if _, err := readyR.Read(make([]byte, 1)); err != nil {
		t.Fatalf("the child never said it was ready: %v", err)
	}
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
wait:
	for {
		select {
		case err = <-exited:
			break wait
		case <-tick.C:
			cmd.Process.Signal(os.Interrupt)
		}
	}
	if want := "writing " + fifo + ": interrupted while waiting for a reader\n"; cmd.ProcessState.ExitCode() != 1 || stderr.String() != want {
		t.Errorf("child: %v, stderr %q, want exit 1 and %q", err, stderr.String(), want)
	}
	if fi, err := os.Lstat(fifo); err != nil || fi.Mode()&fs.ModeNamedPipe == 0 {
		t.Errorf("the FIFO is now %v (%v)", fi.Mode(), err)
	}
}

func TestSocketWrittenThrough(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sock")
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	got := make(chan string, 1)
	go func() {
		c, err := l.Accept()
		if err != nil {
			got <- err.Error()
			return
		}
		defer c.Close()
		b, _ := io.ReadAll(c)
		got <- string(b)
	}()
	if err := Write(path, nil, Shared, text("over the socket\n")); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(path); err != nil || fi.Mode()&fs.ModeSocket == 0 {
		t.Fatalf("the socket is now %v (%v)", fi.Mode(), err)
	}
	if s := <-got; s != "over the socket\n" {
		t.Errorf("the listener got %q", s)
	}
}

func TestStdout(t *testing.T) {
	for _, path := range []string{"-", ""} {
		var out bytes.Buffer
		if err := Write(path, &out, Shared, text("to stdout\n")); err != nil {
			t.Fatal(err)
		}
		if out.String() != "to stdout\n" {
			t.Errorf("Write(%q) put %q on stdout", path, out.String())
		}
	}
	// Without a stdout, "-" is a file in the folder the caller chose.
	dir := t.TempDir()
	if err := WriteFile(filepath.Join(dir, "-"), Shared, []byte("a file\n")); err != nil {
		t.Fatal(err)
	}
	wantContent(t, filepath.Join(dir, "-"), "a file\n")
}

// TestDevStdoutOnSocket is /dev/stdout when standard output is a socket,
// as under a service manager: open(2) refuses it, the write still lands.
func TestDevStdoutOnSocket(t *testing.T) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	ours, theirs := os.NewFile(uintptr(fds[0]), "ours"), os.NewFile(uintptr(fds[1]), "theirs")
	defer ours.Close()
	cmd := exec.Command(os.Args[0], "/dev/stdout")
	cmd.Env = append(os.Environ(), childEnv+"=1")
	cmd.Stdout = theirs
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	theirs.Close()
	b, _ := io.ReadAll(ours)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("child: %v: %s", err, stderr.String())
	}
	if string(b) != "from the child\n" {
		t.Errorf("standard output got %q", b)
	}
}

func TestRefused(t *testing.T) {
	dir := t.TempDir()
	os.Mkdir(filepath.Join(dir, "reports"), 0o755)
	os.Symlink("reports", filepath.Join(dir, "to-reports"))
	os.WriteFile(filepath.Join(dir, "file"), nil, 0o644)
	block := ""
	if err := syscall.Mknod(filepath.Join(dir, "disk"), syscall.S_IFBLK|0o600, 7<<8|200); err == nil {
		block = filepath.Join(dir, "disk")
	}
	for _, c := range []struct{ path, want string }{
		{filepath.Join(dir, "reports"), "writing " + filepath.Join(dir, "reports") + ": is a directory, not a file"},
		{filepath.Join(dir, "to-reports"), "is a directory, not a file"},
		{filepath.Join(dir, "reports") + "/", "is a directory, not a file"},
		{filepath.Join(dir, "missing", "report.txt"), "folder " + filepath.Join(dir, "missing") + " does not exist"},
		{filepath.Join(dir, "file", "report.txt"), "not a directory"},
		{block, "is a block device"},
	} {
		if c.path == "" {
			continue
		}
		for name, write := range map[string]func() error{
			"Write": func() error { return Write(c.path, nil, Shared, text("x")) },
			"Check": func() error { return Check(c.path) },
		} {
			err := write()
			if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("%s(%s) = %v, want one line with %q", name, c.path, err, c.want)
			}
		}
	}
	want := []string{"disk", "file", "reports", "to-reports"}
	if block == "" {
		want = want[1:]
	}
	if n := outputtest.Names(t, dir); !slices.Equal(n, want) {
		t.Errorf("folder holds %v after refusals, want %v", n, want)
	}
	if n := outputtest.Names(t, filepath.Join(dir, "reports")); len(n) != 0 {
		t.Errorf("refused directory holds %v", n)
	}
}

// TestReadOnlyFolder writes into a folder its user may not write to. Root
// may write anywhere, so under root the write runs as nobody.
func TestReadOnlyFolder(t *testing.T) {
	base := t.TempDir()
	ro := filepath.Join(base, "ro")
	os.Mkdir(ro, 0o755)
	existing := filepath.Join(ro, "old.txt")
	os.WriteFile(existing, []byte("old\n"), 0o666)
	os.Chmod(existing, 0o666)
	newFile := filepath.Join(ro, "new.txt")

	nobody := outputtest.Nobody(t, base, childEnv+"=1")
	if nobody != nil {
		// Root writes anywhere: ro and the file in it are nobody's, and
		// nobody writes.
		for _, p := range []string{ro, existing} {
			if err := os.Chown(p, 65534, 65534); err != nil {
				t.Fatal(err)
			}
		}
	}
	os.Chmod(ro, 0o555)
	t.Cleanup(func() { os.Chmod(ro, 0o755) })
	for _, path := range []string{newFile, existing} {
		want := "writing " + path + ": folder " + ro + " is not writable (permission denied)"
		if nobody != nil {
			if code, stderr := nobody(path); code != 1 || stderr != want+"\n" {
				t.Errorf("as nobody, writing %s: exit %d, stderr %q, want %q", path, code, stderr, want)
			}
			continue
		}
		if err := Check(path); err == nil || err.Error() != want {
			t.Errorf("Check(%s) = %v, want %q", path, err, want)
		}
		if err := Write(path, nil, Shared, text("new\n")); err == nil || err.Error() != want {
			t.Errorf("Write(%s) = %v, want %q", path, err, want)
		}
	}
	if nobody != nil {
		os.Remove(filepath.Join(base, filepath.Base(os.Args[0])))
	}
	wantContent(t, existing, "old\n")
	if n := outputtest.Names(t, ro); !slices.Equal(n, []string{"old.txt"}) {
		t.Errorf("read-only folder holds %v, want old.txt alone", n)
	}
}

func TestResolve(t *testing.T) {
	dir := t.TempDir()
	for path, want := range map[string]string{
		filepath.Join(dir, "plain"): filepath.Join(dir, "plain"),
		filepath.Join(dir, "none"):  filepath.Join(dir, "none"),
	} {
		if got, err := Resolve(path); err != nil || got != want {
			t.Errorf("Resolve(%s) = %s, %v, want %s", path, got, err, want)
		}
	}
	os.Symlink("loop", filepath.Join(dir, "loop"))
	if _, err := Resolve(filepath.Join(dir, "loop")); !errors.Is(err, syscall.ELOOP) {
		t.Errorf("Resolve(loop) = %v, want ELOOP", err)
	}
	if err := Write(filepath.Join(dir, "loop"), nil, Shared, text("x")); err == nil || strings.Contains(err.Error(), "\n") {
		t.Errorf("Write(loop) = %v, want a one-line error", err)
	}
}
