//go:build linux

// Package outputtest makes the destinations output's tests write to: a
// copy of /dev/null, a FIFO with its reader, and a way to run the test
// binary as the user nobody.
package outputtest

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// NullDevice makes a character device like /dev/null (1:3) in a test
// folder, so a regression that replaced it takes the copy, not the
// machine's /dev/null (as perfdoctor once did, run as root). /dev/null
// itself is used only when the test could not replace it (not root).
func NullDevice(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "null")
	err := syscall.Mknod(path, syscall.S_IFCHR|0o666, 1<<8|3)
	switch {
	case err == nil:
		return path
	case os.Geteuid() == 0:
		t.Skipf("root may not make device nodes here (%v): not risking the real /dev/null", err)
	}
	return "/dev/null"
}

// FIFO makes a named pipe in a test folder with a reader already waiting
// on it; got yields what the reader read once the writer closes it.
func FIFO(t *testing.T) (path string, got <-chan string) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	read := make(chan string, 1)
	go func() {
		f, err := os.Open(path)
		if err != nil {
			read <- err.Error()
			return
		}
		defer f.Close()
		b, _ := io.ReadAll(f)
		read <- string(b)
	}()
	return path, read
}

// Umask is the process's file mode creation mask.
func Umask() fs.FileMode {
	m := syscall.Umask(0)
	syscall.Umask(m)
	return fs.FileMode(m)
}

// Names lists dir: a temporary file left behind shows here.
func Names(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var n []string
	for _, e := range ents {
		n = append(n, e.Name())
	}
	return n
}

// Nobody returns, when the tests run as root, a function that runs this
// test binary with env added as the user nobody and returns its exit code
// and stderr. The binary is copied into dir (its own folder only root may
// enter), and dir and the folders above it up to the temporary directory
// are opened to nobody. Not root, it returns nil: the tests already run
// unprivileged.
func Nobody(t *testing.T, dir string, env ...string) func(args ...string) (int, string) {
	t.Helper()
	if os.Geteuid() != 0 {
		return nil
	}
	for d := dir; strings.HasPrefix(d, os.TempDir()+"/"); d = filepath.Dir(d) {
		os.Chmod(d, 0o755)
	}
	exe, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, filepath.Base(os.Args[0]))
	if err := os.WriteFile(bin, exe, 0o755); err != nil {
		t.Fatal(err)
	}
	return func(args ...string) (int, string) {
		cmd := exec.Command(bin, args...)
		cmd.Env = append(os.Environ(), env...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		var stderr strings.Builder
		cmd.Stderr = &stderr
		err := cmd.Run()
		var exit *exec.ExitError
		if err != nil && !errors.As(err, &exit) {
			t.Fatalf("running %s as nobody: %v", bin, err)
		}
		return cmd.ProcessState.ExitCode(), stderr.String()
	}
}
