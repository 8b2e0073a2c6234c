// Package output writes the files a user names (-o FILE) without destroying
// what the name points at:
//
//   - "-" is standard output.
//   - A new path or a regular file is written to a temporary file in the same
//     folder, synced, and renamed over the destination when complete: a
//     reader sees the old file or the whole new one, and a failed write
//     leaves the old file and no temporary. A replaced file keeps its mode
//     (and its owner, where the process may give files away).
//   - A symbolic link is followed: its final target is written that way and
//     the link stays a link.
//   - A character device, FIFO or socket (/dev/null, /dev/stdout, a named
//     pipe) is written through, never replaced. A FIFO waits for its reader;
//     an interrupt ends the wait.
//   - A directory, a block device, a missing or unwritable folder is refused
//     with one line naming the path and the reason.
package output

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
)

// Stdout is the file name that means standard output.
const Stdout = "-"

// Modes of new files. A replaced file keeps its own.
const (
	// Shared is for reports, exports and profiles: nothing in them is secret.
	Shared fs.FileMode = 0o644
	// Private is for what may hold credentials: command lines, URLs as typed.
	Private fs.FileMode = 0o600
)

// Error is a destination refused or a write that failed, said in one line.
type Error struct {
	Path   string // as the caller named it
	Reason string
	Err    error // the underlying error, if any
}

func (e *Error) Error() string { return "writing " + e.Path + ": " + e.Reason }

func (e *Error) Unwrap() error { return e.Err }

// Write writes what render produces to path. An empty path or "-" is
// stdout; with stdout nil, "-" is a file of that name. Errors from render
// are returned as they are; the failures of writing say which path and why.
func Write(path string, stdout io.Writer, perm fs.FileMode, render func(io.Writer) error) error {
	if stdout != nil && (path == "" || path == Stdout) {
		return render(stdout)
	}
	if path == "" {
		return &Error{Path: `""`, Reason: "no file named"}
	}
	d, err := locate(path)
	if err != nil {
		return err
	}
	if stdout != nil && d.info != nil && isStdout(d.info) {
		return render(stdout) // /dev/stdout, even when it is a socket open() refuses
	}
	how, err := d.method(path)
	if err != nil {
		return err
	}
	switch how {
	case replace:
		return d.replace(path, perm, render)
	case socket:
		conn, err := net.Dial("unix", d.path)
		if err != nil {
			return &Error{Path: path, Reason: "a socket that takes no connection: " + cause(err), Err: err}
		}
		return through(path, conn, render)
	default:
		f, err := openThrough(d.path, d.info.Mode()&fs.ModeNamedPipe != 0)
		if err != nil {
			return &Error{Path: path, Reason: cause(err), Err: err}
		}
		return through(path, f, render)
	}
}

// ErrInterrupted is an interrupt (Ctrl-C) while a FIFO had no reader.
var ErrInterrupted = errors.New("interrupted while waiting for a reader")

// openThrough opens a device or FIFO as it is: no O_CREATE, no O_TRUNC. A
// FIFO's open waits for its reader, as a shell redirection does; an
// interrupt or termination signal ends the wait (the command has already
// taken the first Ctrl-C to stop its work and report it).
func openThrough(path string, fifo bool) (*os.File, error) {
	if !fifo {
		return os.OpenFile(path, os.O_WRONLY, 0)
	}
	type opened struct {
		f   *os.File
		err error
	}
	done := make(chan opened, 1)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sig)
	go func() {
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		done <- opened{f, err}
	}()
	select {
	case o := <-done:
		return o.f, o.err
	case <-sig:
		// Be the reader the open waits for, so it returns, and close both.
		if r, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0); err == nil {
			if o := <-done; o.f != nil {
				o.f.Close()
			}
			r.Close()
		}
		return nil, ErrInterrupted
	}
}

// WriteFile writes data to path, a file in a folder the caller chose: "-"
// is a file of that name there.
func WriteFile(path string, perm fs.FileMode, data []byte) error {
	return Write(path, nil, perm, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// Check says at once whether Write could write to path, so a command fails
// before minutes of work rather than after. For a new or regular file it
// creates and removes a temporary file in the folder; a device or FIFO is
// not opened.
func Check(path string) error {
	if path == "" || path == Stdout {
		return nil
	}
	d, err := locate(path)
	if err != nil {
		return err
	}
	if how, err := d.method(path); err != nil || how != replace {
		return err
	}
	f, err := createTemp(d.path, Private)
	if err != nil {
		return folderError(path, d.path, err)
	}
	f.Close()
	os.Remove(f.Name())
	return nil
}

// Resolve returns where a write to path lands: path itself, or the final
// target of the symbolic links at it, which need not exist yet.
func Resolve(path string) (string, error) {
	for range 40 { // the kernel's own limit on links followed
		fi, err := os.Lstat(path)
		if errors.Is(err, fs.ErrNotExist) || (err == nil && fi.Mode()&fs.ModeSymlink == 0) {
			return path, nil
		}
		if err != nil {
			return "", err
		}
		target, err := os.Readlink(path)
		if err != nil {
			return "", err
		}
		if !filepath.IsAbs(target) {
			// Relative to the link's folder as the kernel sees it: a ".."
			// in target climbs from the real folder, not the named one.
			dir, err := filepath.EvalSymlinks(filepath.Dir(path))
			if err != nil {
				return "", err
			}
			target = filepath.Join(dir, target)
		}
		path = target
	}
	return "", &fs.PathError{Op: "resolve", Path: path, Err: syscall.ELOOP}
}

// destination is what a path names now.
type destination struct {
	path string      // where the write lands: the final target of links, for a file
	info fs.FileInfo // what is there; nil for a new file
}

func locate(path string) (destination, error) {
	fi, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return destination{path: path}, nil
	case err != nil:
		return destination{}, &Error{Path: path, Reason: cause(err), Err: err}
	case fi.Mode()&fs.ModeSymlink == 0:
		return destination{path: path, info: fi}, nil
	}
	// Stat follows every link, /proc's links to open descriptors included,
	// whose text (pipe:[123]) is no path: what is not a regular file is
	// opened through the link.
	st, err := os.Stat(path)
	switch {
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return destination{}, &Error{Path: path, Reason: cause(err), Err: err}
	case err == nil && !st.Mode().IsRegular():
		return destination{path: path, info: st}, nil
	}
	target, err := Resolve(path)
	if err != nil {
		return destination{}, &Error{Path: path, Reason: cause(err), Err: err}
	}
	return destination{path: target, info: st}, nil
}

// method is how a destination is written.
type method int

const (
	replace method = iota // a temporary file renamed over it
	open                  // opened and written through
	socket                // connected to and written through
)

func (d destination) method(path string) (method, error) {
	if d.info == nil {
		return replace, nil
	}
	m := d.info.Mode()
	switch {
	case m.IsRegular():
		return replace, nil
	case m.IsDir():
		return 0, &Error{Path: path, Reason: "is a directory, not a file"}
	case m&fs.ModeCharDevice != 0, m&fs.ModeNamedPipe != 0:
		return open, nil
	case m&fs.ModeDevice != 0:
		return 0, &Error{Path: path, Reason: "is a block device; a report is not written over a disk"}
	case m&fs.ModeSocket != 0:
		return socket, nil
	}
	return 0, &Error{Path: path, Reason: "is not a file, device, FIFO or socket"}
}

// replace writes to a temporary file beside d.path and renames it over
// d.path when complete.
func (d destination) replace(path string, perm fs.FileMode, render func(io.Writer) error) error {
	if d.info != nil {
		perm = Private // until the old mode is copied: never readable by more than the old file
	}
	tmp, err := createTemp(d.path, perm)
	if err != nil {
		return folderError(path, d.path, err)
	}
	renamed := false
	defer func() {
		if !renamed {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if err := buffered(path, tmp, render); err != nil {
		return err
	}
	if d.info != nil {
		if err := tmp.Chmod(d.info.Mode().Perm()); err != nil {
			return &Error{Path: path, Reason: "keeping its mode: " + cause(err), Err: err}
		}
		keepOwner(tmp, d.info)
	}
	if err := tmp.Sync(); err != nil {
		return &Error{Path: path, Reason: cause(err), Err: err}
	}
	if err := tmp.Close(); err != nil {
		return &Error{Path: path, Reason: cause(err), Err: err}
	}
	if err := os.Rename(tmp.Name(), d.path); err != nil {
		return &Error{Path: path, Reason: cause(err), Err: err}
	}
	renamed = true
	// The rename is durable once the folder is synced; a failure here
	// loses nothing written, so it is not reported.
	if dir, err := os.Open(filepath.Dir(d.path)); err == nil {
		dir.Sync()
		dir.Close()
	}
	return nil
}

// through writes to an open device, FIFO or socket.
func through(path string, w io.WriteCloser, render func(io.Writer) error) error {
	err := buffered(path, w, render)
	if cerr := w.Close(); err == nil && cerr != nil {
		err = &Error{Path: path, Reason: cause(cerr), Err: cerr}
	}
	return err
}

// buffered runs render into w through a buffer: renderers write in small
// pieces, and each write to a file is a system call.
func buffered(path string, w io.Writer, render func(io.Writer) error) error {
	bw := bufio.NewWriterSize(&failure{w: w, path: path}, 64<<10)
	if err := render(bw); err != nil {
		return err
	}
	return bw.Flush()
}

// failure names the destination in write errors, which would otherwise
// name a temporary file or nothing.
type failure struct {
	w    io.Writer
	path string
}

func (f *failure) Write(p []byte) (int, error) {
	n, err := f.w.Write(p)
	if err != nil {
		err = &Error{Path: f.path, Reason: cause(err), Err: err}
	}
	return n, err
}

// createTemp creates a new file beside final for writing, with perm (less
// the umask, as any new file).
func createTemp(final string, perm fs.FileMode) (*os.File, error) {
	dir, base := filepath.Dir(final), filepath.Base(final)
	if len(base) > 64 { // leave room in the folder's name limit
		base = base[:64]
	}
	for range 100 {
		name := filepath.Join(dir, "."+base+".tmp-"+strconv.FormatUint(rand.Uint64(), 36))
		f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
		if !errors.Is(err, fs.ErrExist) {
			return f, err
		}
	}
	return nil, fmt.Errorf("no free temporary name in %s", dir)
}

// folderError says why a file could not be created beside final.
func folderError(path, final string, err error) error {
	dir := filepath.Dir(final)
	var reason string
	switch {
	case errors.Is(err, fs.ErrNotExist):
		reason = "folder " + dir + " does not exist"
	case errors.Is(err, syscall.ENOTDIR):
		reason = dir + " is not a folder"
	case errors.Is(err, fs.ErrPermission):
		reason = "folder " + dir + " is not writable (permission denied)"
	case errors.Is(err, syscall.EROFS):
		reason = "folder " + dir + " is on a read-only file system"
	default:
		reason = cause(err)
	}
	return &Error{Path: path, Reason: reason, Err: err}
}

// cause is err without the operation and path a *PathError repeats.
func cause(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// isStdout reports whether fi is the file standard output is.
func isStdout(fi fs.FileInfo) bool {
	st, err := os.Stdout.Stat()
	return err == nil && os.SameFile(st, fi)
}
