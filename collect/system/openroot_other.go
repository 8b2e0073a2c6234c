//go:build !linux

package system

import (
	"os"
	"path/filepath"
)

// openInRoot opens p under root: only Linux has a /proc/PID/root to read
// a process's files through.
func openInRoot(root, p string) (*os.File, error) {
	return os.Open(filepath.Join(root, filepath.FromSlash(p)))
}
