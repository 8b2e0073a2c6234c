// Package d3logging reproduces casebook case D3, logging-cost: a UDP -> Redis
// -> UDP service logged every step of every request; trimming the logs (with
// merging reports and cheaper node selection) took it from 170k to 200k QPS.
//
// Each request selects a backend node, looks up and merges a report, and logs
// with log/slog's TextHandler.
//
//   - Bad: the logger runs at Debug in production, and every request writes
//     LinesPerRequest records with several attributes each.
//   - Fixed: the logger runs at Info; the per-step records stay at Debug
//     behind an Enabled check (so their attributes are not even built), and
//     the access record is sampled, one request in SampleEvery.
//
// Records go to a writer that counts and discards them (io.Discard behind a
// counter), standing for a log file: the cost measured is formatting, not
// the disk.
//
// This is "any Go service": it imports nothing from perfdoctor.
package d3logging

import (
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"
)

// Variants.
const (
	Bad   = "bad"
	Fixed = "fixed"
)

// LinesPerRequest is how many records the bad variant writes per request;
// SampleEvery is the fixed variant's access-log sampling.
const (
	LinesPerRequest = 7
	SampleEvery     = 100
)

// Nodes are the backends a request is routed to.
var Nodes = [8]string{
	"10.0.1.11:6379", "10.0.1.12:6379", "10.0.1.13:6379", "10.0.1.14:6379",
	"10.0.2.21:6379", "10.0.2.22:6379", "10.0.2.23:6379", "10.0.2.24:6379",
}

// Handler is the service.
type Handler struct {
	log    *slog.Logger
	sample uint64
	seq    atomic.Uint64
	out    *Counter
}

// Counter is an io.Writer that counts what it discards.
type Counter struct {
	Bytes, Writes atomic.Int64
	w             io.Writer
}

func (c *Counter) Write(p []byte) (int, error) {
	c.Bytes.Add(int64(len(p)))
	c.Writes.Add(1)
	return c.w.Write(p)
}

// NewHandler returns the variant's handler, logging to a discarding counter.
func NewHandler(variant string) (*Handler, error) {
	out := &Counter{w: io.Discard}
	var level slog.Level
	var sample uint64
	switch variant {
	case Bad:
		level, sample = slog.LevelDebug, 1
	case Fixed:
		level, sample = slog.LevelInfo, SampleEvery
	default:
		return nil, fmt.Errorf("d3logging: unknown variant %q (want %q or %q)", variant, Bad, Fixed)
	}
	lg := slog.New(slog.NewTextHandler(out, &slog.HandlerOptions{Level: level})).With("service", "udp-relay", "pid", 4242)
	return &Handler{log: lg, sample: sample, out: out}, nil
}

// Output is the log writer.
func (h *Handler) Output() *Counter { return h.out }

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	ctx := r.Context()
	seq := h.seq.Add(1)
	key := rand.Uint64()
	debug := h.log.Enabled(ctx, slog.LevelDebug)
	if debug {
		h.log.LogAttrs(ctx, slog.LevelDebug, "request received",
			slog.Uint64("seq", seq), slog.String("remote", r.RemoteAddr), slog.String("path", r.URL.Path),
			slog.String("method", r.Method), slog.Int64("content_length", r.ContentLength))
	}
	node, weight := selectNode(key)
	if debug {
		h.log.LogAttrs(ctx, slog.LevelDebug, "node selected",
			slog.Uint64("seq", seq), slog.String("node", Nodes[node]), slog.Int("index", node),
			slog.Uint64("weight", weight), slog.Int("candidates", len(Nodes)))
	}
	if debug {
		h.log.LogAttrs(ctx, slog.LevelDebug, "redis request",
			slog.Uint64("seq", seq), slog.String("node", Nodes[node]), slog.String("cmd", "HGETALL"),
			slog.Uint64("report", key%100_000), slog.Duration("timeout", 50*time.Millisecond))
	}
	hit, version := lookup(key)
	if debug {
		h.log.LogAttrs(ctx, slog.LevelDebug, "redis reply",
			slog.Uint64("seq", seq), slog.String("node", Nodes[node]), slog.Bool("nil", !hit),
			slog.Int("fields", int(version%32)), slog.Duration("elapsed", time.Since(start)))
	}
	if debug {
		h.log.LogAttrs(ctx, slog.LevelDebug, "cache lookup",
			slog.Uint64("seq", seq), slog.Uint64("report", key%100_000),
			slog.Bool("hit", hit), slog.Uint64("version", version), slog.Duration("elapsed", time.Since(start)))
	}
	items, sum := merge(key ^ version)
	if debug {
		h.log.LogAttrs(ctx, slog.LevelDebug, "report merged",
			slog.Uint64("seq", seq), slog.Int("items", items), slog.Uint64("checksum", sum),
			slog.String("node", Nodes[node]), slog.Duration("elapsed", time.Since(start)))
	}
	var b [64]byte
	resp := append(b[:0], "node="...)
	resp = strconv.AppendInt(resp, int64(node), 10)
	resp = append(resp, " items="...)
	resp = strconv.AppendInt(resp, int64(items), 10)
	resp = append(resp, '\n')
	w.Header().Set("Content-Type", "text/plain")
	w.Write(resp)
	if seq%h.sample == 0 {
		h.log.LogAttrs(ctx, slog.LevelInfo, "request served",
			slog.Uint64("seq", seq), slog.String("remote", r.RemoteAddr), slog.String("node", Nodes[node]),
			slog.Int("status", http.StatusOK), slog.Int("bytes", len(resp)), slog.Bool("cache_hit", hit),
			slog.Duration("duration", time.Since(start)))
	}
}

// The service's own work, the same in both variants: allocation-free,
// split in three functions (not inlined) so none dominates the profile.
const rounds = 768

//go:noinline
func selectNode(key uint64) (int, uint64) {
	best, bestW := 0, uint64(0)
	for i := range Nodes {
		h := key ^ uint64(i)*0x9e3779b97f4a7c15
		for range rounds / 8 {
			h ^= h >> 33
			h *= 0xff51afd7ed558ccd
		}
		if h > bestW {
			best, bestW = i, h
		}
	}
	return best, bestW >> 48
}

//go:noinline
func lookup(key uint64) (bool, uint64) {
	h := key
	for range rounds {
		h = (h ^ (h >> 30)) * 0x94d049bb133111eb
		h ^= h >> 31
	}
	return h%4 != 0, h >> 40
}

//go:noinline
func merge(key uint64) (int, uint64) {
	h := key
	items := 0
	for range rounds {
		h = (h ^ (h >> 27)) * 0x2545f4914f6cdd1d
		items += int(h & 1)
	}
	return items, h
}
