// Package l3diskread reproduces a service whose requests wait for the disk
// (finding class disk-io-wait): each request reads a few records from a
// data file with direct I/O, so every read goes to the device, as a
// service does whose working set outgrew the page cache or that bypasses
// it.
//
//   - Bad: four 4 KiB reads from the file per request (O_DIRECT, random
//     offsets): each waits for the device.
//   - Fixed: the same records served from memory: the file mapped once at
//     start-up and read through the page cache (the working set fits).
//
// The 64 MiB file lives in a temporary directory on a disk-backed file
// system and is removed by Close. This is "any Go service": it imports
// nothing from perfdoctor.
package l3diskread

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"syscall"
	"unsafe"
)

// Variants.
const (
	Bad   = "bad"
	Fixed = "fixed"
)

const (
	fileSize   = 64 << 20
	block      = 4096
	perRequest = 4
)

// Handler serves a checksum of perRequest random records.
type Handler struct {
	dir     string
	f       *os.File
	mem     []byte // fixed: the file mapped into memory
	variant string
}

// NewHandler writes the data file and opens it for the variant.
func NewHandler(variant string) (*Handler, error) {
	if variant != Bad && variant != Fixed {
		return nil, fmt.Errorf("l3diskread: unknown variant %q", variant)
	}
	dir, err := dataDir()
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, "data")
	if err := writeData(path); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	h := &Handler{dir: dir, variant: variant}
	if variant == Fixed {
		f, err := os.Open(path)
		if err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("l3diskread: %w", err)
		}
		defer f.Close()
		h.mem, err = syscall.Mmap(int(f.Fd()), 0, fileSize, syscall.PROT_READ, syscall.MAP_SHARED|syscall.MAP_POPULATE)
		if err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("l3diskread: mmap: %w", err)
		}
		return h, nil
	}
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_DIRECT, 0)
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("l3diskread: direct I/O: %w", err)
	}
	h.f = os.NewFile(uintptr(fd), path)
	return h, nil
}

// writeData writes fileSize bytes of random records, a chunk at a time.
func writeData(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("l3diskread: %w", err)
	}
	chunk := make([]byte, 1<<20)
	r := rand.New(rand.NewPCG(3, 4))
	for range fileSize / len(chunk) {
		for i := 0; i < len(chunk); i += 8 {
			v := r.Uint64()
			for j := range 8 {
				chunk[i+j] = byte(v >> (8 * j))
			}
		}
		if _, err := f.Write(chunk); err != nil {
			f.Close()
			return fmt.Errorf("l3diskread: %w", err)
		}
	}
	return f.Close()
}

// dataDir is a temporary directory where reads reach a disk (not tmpfs,
// which has no direct I/O).
func dataDir() (string, error) {
	base := os.TempDir()
	var st syscall.Statfs_t
	const tmpfsMagic = 0x01021994
	if err := syscall.Statfs(base, &st); err == nil && st.Type == tmpfsMagic {
		if c, err := os.UserCacheDir(); err == nil {
			base = c
			os.MkdirAll(base, 0o700)
		}
	}
	dir, err := os.MkdirTemp(base, "l3diskread-")
	if err != nil {
		return "", fmt.Errorf("l3diskread: data directory: %w", err)
	}
	return dir, nil
}

// aligned returns a block-aligned buffer of one block, as direct I/O needs.
func aligned() []byte {
	b := make([]byte, 2*block)
	off := block - int(uintptr(unsafe.Pointer(&b[0]))%block)
	if off == block {
		off = 0
	}
	return b[off : off+block]
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var sum uint64
	buf := aligned()
	for range perRequest {
		off := int64(rand.IntN(fileSize/block)) * block
		var rec []byte
		if h.variant == Bad {
			if _, err := h.f.ReadAt(buf, off); err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
			rec = buf
		} else {
			rec = h.mem[off : off+block]
		}
		for _, c := range rec[:64] {
			sum = sum*31 + uint64(c)
		}
	}
	fmt.Fprintf(w, "%016x\n", sum)
}

// Close removes the data file.
func (h *Handler) Close() error {
	var err error
	if h.f != nil {
		err = h.f.Close()
	}
	if h.mem != nil {
		err = errors.Join(err, syscall.Munmap(h.mem))
	}
	return errors.Join(err, os.RemoveAll(h.dir))
}
