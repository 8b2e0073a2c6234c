package system

import (
	"errors"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// openInRoot opens p (absolute, as a process sees it) under root, the
// process's /proc/PID/root, with every symbolic link on the way resolved
// inside that root (openat2's RESOLVE_IN_ROOT, Linux 5.6): a container's
// /etc/mysql/my.cnf linking to /etc/alternatives/my.cnf is the container's
// file, not the host's. Where the kernel has no openat2 (or a sandbox
// refuses it) the path is opened through root as it is. A FIFO does not
// block the open (O_NONBLOCK); the caller reads regular files only.
func openInRoot(root, p string) (*os.File, error) {
	plain := func() (*os.File, error) { return os.Open(filepath.Join(root, filepath.FromSlash(p))) }
	dir, err := unix.Open(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return plain()
	}
	defer unix.Close(dir)
	fd, err := unix.Openat2(dir, strings.TrimPrefix(p, "/"), &unix.OpenHow{
		Flags:   unix.O_RDONLY | unix.O_CLOEXEC | unix.O_NONBLOCK,
		Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS,
	})
	switch {
	case errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EPERM):
		return plain()
	case err != nil:
		return nil, &os.PathError{Op: "open", Path: p, Err: err}
	}
	return os.NewFile(uintptr(fd), p), nil
}
