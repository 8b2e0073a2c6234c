package bundle

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/google/pprof/profile"

	"github.com/perfdoctor/perfdoctor/internal/output"
)

// Writer assembles a bundle the one way every producer (collect, collect
// --jfr, collect --perf, sys, the agent's captures) writes one: files go into
// a temporary directory next to the destination, each item is recorded as
// written or as failed or skipped with its reason, the manifest is written
// last, and the directory is renamed into place. A directory at the
// destination is therefore always a complete bundle; an interrupted one is
// left under its temporary name.
type Writer struct {
	dir string

	mu    sync.Mutex
	items []Item
}

// Create starts a bundle that Finish renames to final. final must not exist
// or be an empty directory; its parent is created if need be. A symbolic
// link at final is followed: the bundle goes where it points.
func Create(final string) (*Writer, error) {
	if err := CheckDestination(final); err != nil {
		return nil, err
	}
	target, err := output.Resolve(final)
	if err != nil {
		return nil, fmt.Errorf("output directory %s: %w", final, err)
	}
	return NewWriter(filepath.Dir(target), filepath.Base(target)+".partial-")
}

// CheckDestination fails unless final is free for a bundle: missing or an
// empty directory (or a link to one). Producers call it before slow work,
// so a bad --output fails at once and leaves nothing behind.
func CheckDestination(final string) error {
	if final == output.Stdout {
		return fmt.Errorf("output directory %s: a bundle is a directory; it cannot go to standard output", final)
	}
	ents, err := os.ReadDir(final)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case errors.Is(err, syscall.ENOTDIR):
		return fmt.Errorf("output directory %s exists and is not a directory", final)
	case err != nil:
		return fmt.Errorf("output directory %s: %w", final, err)
	case len(ents) > 0:
		return fmt.Errorf("output directory %s already exists and is not empty", final)
	}
	return nil
}

// NewWriter starts a bundle in a new directory under parent whose name
// starts with prefix (a pattern for os.MkdirTemp); Finish names its final place.
func NewWriter(parent, prefix string) (*Writer, error) {
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return nil, fmt.Errorf("creating output directory: %w", err)
	}
	dir, err := os.MkdirTemp(parent, prefix)
	if err != nil {
		return nil, fmt.Errorf("creating output directory: %w", err)
	}
	// MkdirTemp makes it 0700; a bundle is a plain directory others may read
	// (and a JVM writing a recording into it needs to).
	if err := os.Chmod(dir, 0o755); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return &Writer{dir: dir}, nil
}

// Dir is the temporary directory the bundle is assembled in.
func (w *Writer) Dir() string { return w.dir }

// Path is where file goes in the bundle under construction.
func (w *Writer) Path(file string) string { return filepath.Join(w.dir, file) }

// Record adds an item as it is.
func (w *Writer) Record(it Item) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.items = append(w.items, it)
}

// Written records item name: with err nil as file (already written at
// Path(file), its size read back), else as failed with err's message.
func (w *Writer) Written(name, file string, took time.Duration, err error) Item {
	it := Item{Name: name, File: file, Status: StatusOK, Duration: Duration(took)}
	if err != nil {
		it.Status, it.Error, it.File = StatusFailed, err.Error(), ""
	} else if st, serr := os.Stat(w.Path(file)); file != "" && serr == nil {
		it.Bytes = st.Size()
	}
	w.Record(it)
	return it
}

// Fail records item name as failed with err's message.
func (w *Writer) Fail(name string, err error) {
	w.Record(Item{Name: name, Status: StatusFailed, Error: err.Error()})
}

// Skip records item name as not applicable, with the reason.
func (w *Writer) Skip(name, reason string) {
	w.Record(Item{Name: name, Status: StatusSkipped, Error: reason})
}

// AddJSON writes v as file and records the item.
func (w *Writer) AddJSON(name, file string, v any, took time.Duration) Item {
	return w.Written(name, file, took, WriteJSONAtomic(w.Path(file), v))
}

// AddProfile writes p gzipped as file and records the item.
func (w *Writer) AddProfile(name, file string, p *profile.Profile, took time.Duration) Item {
	_, err := WriteProfile(w.Path(file), p)
	return w.Written(name, file, took, err)
}

// Annotate adds note to what the manifest says of item name's data (how it
// differs from what was asked for); an empty note adds nothing.
func (w *Writer) Annotate(name, note string) {
	if note == "" {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for i := range w.items {
		if w.items[i].Name == name {
			w.items[i].AddNote(note)
		}
	}
}

// Items are the items recorded so far, in order.
func (w *Writer) Items() []Item {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]Item(nil), w.items...)
}

// Complete fills m's format version, items and partial flag from what was
// recorded, for a manifest whose items the Writer kept.
func (w *Writer) Complete(m *Manifest) {
	m.FormatVersion = FormatVersion
	m.Items = w.Items()
	m.Partial = len(m.Failed()) > 0
}

// Finish writes manifest (a Manifest, or a value embedding one) last and
// renames the bundle to final, or to where a symbolic link at final points
// (the link stays). An empty directory at final is replaced; a non-empty
// one, or anything that is not a directory, is never touched. On error the
// bundle stays at Dir, which the error names.
func (w *Writer) Finish(manifest any, final string) error {
	if err := WriteJSONAtomic(w.Path(ManifestFile), manifest); err != nil {
		return fmt.Errorf("writing manifest (incomplete bundle left in %s): %w", w.dir, err)
	}
	target, err := output.Resolve(final)
	if err != nil {
		return fmt.Errorf("bundle left in %s: %w", w.dir, err)
	}
	fi, err := os.Lstat(target)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return fmt.Errorf("bundle left in %s: %w", w.dir, err)
	case !fi.IsDir():
		return fmt.Errorf("bundle left in %s: %s exists and is not a directory", w.dir, final)
	default:
		// os.Remove refuses a non-empty directory, so one filled meanwhile is kept.
		if err := os.Remove(target); err != nil {
			return fmt.Errorf("bundle left in %s: %w", w.dir, err)
		}
	}
	if err := os.Rename(w.dir, target); err != nil {
		return fmt.Errorf("bundle left in %s: %w", w.dir, err)
	}
	return nil
}

// Abort removes the bundle under construction.
func (w *Writer) Abort() { os.RemoveAll(w.dir) }

// WriteProfile writes p gzipped to path atomically and returns its size.
func WriteProfile(path string, p *profile.Profile) (int64, error) {
	var buf bytes.Buffer
	if err := p.Write(&buf); err != nil {
		return 0, fmt.Errorf("encoding %s: %w", filepath.Base(path), err)
	}
	if err := WriteFileAtomic(path, buf.Bytes()); err != nil {
		return 0, err // it names the path
	}
	return int64(buf.Len()), nil
}
