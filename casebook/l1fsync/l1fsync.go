// Package l1fsync reproduces a write-ahead log that syncs every request to
// disk on the request path (finding class sync-disk-write), as etcd's WAL
// and redis's appendfsync always do: each accepted write waits for an
// fdatasync, so the disk's sync latency, not the CPU, sets throughput and
// p99.
//
//   - Bad: the handler appends its record and calls fdatasync itself, under
//     the log's lock: one fsync per request, every request queued behind
//     the fsyncs ahead of it.
//   - Fixed: group commit. Handlers queue their record and wait; one
//     committer goroutine writes everything queued with one write and one
//     fdatasync, then answers all of them. Each fsync now covers every
//     request that arrived during the previous one.
//
// The log lives in a temporary directory on a disk-backed file system (not
// tmpfs, where fsync costs nothing) and is removed by Close.
//
// This is "any Go service": it imports nothing from perfdoctor.
package l1fsync

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// Variants.
const (
	Bad   = "bad"
	Fixed = "fixed"
)

// RecordSize is the size of one logged record.
const RecordSize = 256

// Handler serves POST-or-GET /?key=...: it logs a record and answers once the
// record is durable.
type Handler struct {
	dir     string
	f       *os.File
	variant string

	mu sync.Mutex // bad: the log's lock, held across write and fdatasync

	queue chan *pending // fixed: records waiting for the committer
	done  chan struct{}
	wg    sync.WaitGroup
}

type pending struct {
	rec  []byte
	errc chan error
}

// NewHandler opens a fresh log for the variant.
func NewHandler(variant string) (*Handler, error) {
	if variant != Bad && variant != Fixed {
		return nil, fmt.Errorf("l1fsync: unknown variant %q", variant)
	}
	dir, err := dataDir()
	if err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(dir, "wal"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("l1fsync: %w", err)
	}
	h := &Handler{dir: dir, f: f, variant: variant}
	if variant == Fixed {
		h.queue = make(chan *pending, 1024)
		h.done = make(chan struct{})
		h.wg.Add(1)
		go h.commit()
	}
	return h, nil
}

// dataDir makes a temporary directory on a file system where fsync reaches
// a disk: the system's temporary directory unless it is tmpfs, else the
// user's cache directory.
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
	dir, err := os.MkdirTemp(base, "l1fsync-")
	if err != nil {
		return "", fmt.Errorf("l1fsync: data directory: %w", err)
	}
	return dir, nil
}

func record(key string) []byte {
	rec := make([]byte, RecordSize)
	n := copy(rec, strconv.FormatInt(time.Now().UnixNano(), 10)+" put "+key+" ")
	for i := n; i < RecordSize-1; i++ {
		rec[i] = 'x'
	}
	rec[RecordSize-1] = '\n'
	return rec
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rec := record(r.URL.Query().Get("key"))
	var err error
	if h.variant == Bad {
		err = h.appendSync(rec)
	} else {
		p := &pending{rec: rec, errc: make(chan error, 1)}
		select {
		case h.queue <- p:
			select {
			case err = <-p.errc:
			case <-h.done:
				err = errors.New("closing")
			}
		case <-h.done:
			err = errors.New("closing")
		}
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Write([]byte("ok\n"))
}

// appendSync is the bad variant: one write and one fdatasync per request.
func (h *Handler) appendSync(rec []byte) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, err := h.f.Write(rec); err != nil {
		return err
	}
	return syscall.Fdatasync(int(h.f.Fd()))
}

// commit is the fixed variant's committer: it takes everything queued,
// writes it with one write and makes it durable with one fdatasync.
func (h *Handler) commit() {
	defer h.wg.Done()
	var batch []*pending
	var buf []byte
	for {
		batch, buf = batch[:0], buf[:0]
		select {
		case p := <-h.queue:
			batch = append(batch, p)
		case <-h.done:
			return
		}
	drain:
		for len(batch) < cap(h.queue) {
			select {
			case p := <-h.queue:
				batch = append(batch, p)
			default:
				break drain
			}
		}
		for _, p := range batch {
			buf = append(buf, p.rec...)
		}
		_, err := h.f.Write(buf)
		if err == nil {
			err = syscall.Fdatasync(int(h.f.Fd()))
		}
		for _, p := range batch {
			p.errc <- err
		}
	}
}

// Close stops the committer and removes the log.
func (h *Handler) Close() error {
	if h.done != nil {
		close(h.done)
		h.wg.Wait()
	}
	err := h.f.Close()
	return errors.Join(err, os.RemoveAll(h.dir))
}
