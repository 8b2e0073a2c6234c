// Package mcpserver is `perfdoctor mcp`: a Model Context Protocol server
// that lets a coding agent diagnose, collect, compare and explain through
// tools with JSON schemas. Every answer is bounded (MaxAnswer bytes of
// JSON, a cursor where more exists), so a large profile never floods the
// model's context; paths are confined to the folders the user allows, and
// live targets to loopback unless the user allows others.
package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/internal/version"
)

// MaxAnswer bounds each tool's structured answer, in bytes of JSON: a few
// KB, a small part of a model's context.
const MaxAnswer = 6 << 10

// Options configure the server.
type Options struct {
	// Roots are the folders tools may read and write; every path a tool
	// is given must lie in one of them. At least one is required.
	Roots []string
	// Targets are the host:port pairs (or hosts) beyond loopback that
	// collect, run and verify may reach.
	Targets []string
	// Tool names the producer in reports and bundles; empty means this
	// build.
	Tool   string
	Logger *slog.Logger
}

// server holds the options and the few evidence sets read last, so that
// top, callers and source over one bundle read it once.
type server struct {
	roots   []string // absolute, symlinks resolved
	targets []string
	tool    string
	log     *slog.Logger

	mu    sync.Mutex
	cache []cachedEvidence
}

type cachedEvidence struct {
	key string
	ev  *evidence.Evidence
}

// evidenceCacheSize is how many evidence sets stay loaded: a diff's two
// sides and the bundle being explored.
const evidenceCacheSize = 3

// New builds the server with every tool registered.
func New(o Options) (*mcp.Server, error) {
	if len(o.Roots) == 0 {
		return nil, errors.New("mcp: allow at least one folder (--allow DIR)")
	}
	s := &server{targets: o.Targets, tool: o.Tool, log: o.Logger}
	if s.tool == "" {
		s.tool = version.Tool()
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	for _, r := range o.Roots {
		abs, err := filepath.Abs(r)
		if err != nil {
			return nil, fmt.Errorf("allowed folder %s: %w", r, err)
		}
		real, err := filepath.EvalSymlinks(abs)
		if err != nil {
			return nil, fmt.Errorf("allowed folder: %w", err)
		}
		if st, err := os.Stat(real); err != nil || !st.IsDir() {
			return nil, fmt.Errorf("allowed folder %s is not a directory", r)
		}
		s.roots = append(s.roots, real)
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "perfdoctor", Version: version.String()}, &mcp.ServerOptions{
		Instructions: "perfdoctor diagnoses Go (and JVM, native) service performance. Start with diagnose on a bundle " +
			"or a live pprof URL; then top, callers, callees and source to look closer; explain tells what a rule means; " +
			"diff and verify compare two versions. Answers are bounded: pass next_cursor back as cursor for more.",
		Logger: s.log,
	})
	s.register(srv)
	return srv, nil
}

// Run serves on stdio until the client disconnects or ctx ends.
func Run(ctx context.Context, o Options) error {
	srv, err := New(o)
	if err != nil {
		return err
	}
	return srv.Run(ctx, &mcp.StdioTransport{})
}

// register adds every tool.
func (s *server) register(srv *mcp.Server) {
	s.registerDiagnosis(srv)
	s.registerProfiles(srv)
	s.registerLive(srv)
}

// addTool registers a tool whose answer is checked against MaxAnswer and
// whose errors reach the model as one line.
func addTool[In, Out any](srv *mcp.Server, name, description string, h func(context.Context, In) (Out, error)) {
	mcp.AddTool(srv, &mcp.Tool{Name: name, Description: description},
		func(ctx context.Context, req *mcp.CallToolRequest, in In) (*mcp.CallToolResult, Out, error) {
			defer keepAlive(ctx, req)()
			out, err := h(ctx, in)
			if err != nil {
				var zero Out
				return nil, zero, errors.New(oneLine(err.Error()))
			}
			if b, err := json.Marshal(out); err != nil {
				var zero Out
				return nil, zero, fmt.Errorf("%s: encoding the answer: %w", name, err)
			} else if len(b) > MaxAnswer {
				// The tools page and clip to stay within the bound; an answer
				// over it is a defect, reported rather than sent.
				var zero Out
				return nil, zero, fmt.Errorf("%s: the answer is %d bytes, over the %d-byte bound; ask for fewer items", name, len(b), MaxAnswer)
			}
			return nil, out, nil
		})
}

// progressEvery is how often a long call tells a client that asked for
// progress that it is still working: collections and loads last seconds
// to minutes, and some clients time a silent call out.
const progressEvery = 5 * time.Second

// keepAlive sends progress notifications while a call runs, when the
// client gave a progress token; the returned func stops them.
func keepAlive(ctx context.Context, req *mcp.CallToolRequest) (stop func()) {
	if req == nil || req.Session == nil || req.Params == nil || req.Params.GetProgressToken() == nil {
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(progressEvery)
		defer tick.Stop()
		for start := time.Now(); ; {
			select {
			case <-ctx.Done():
				return
			case now := <-tick.C:
				elapsed := now.Sub(start).Round(time.Second)
				// A client that went away ends the call through ctx.
				_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: req.Params.GetProgressToken(),
					Progress: elapsed.Seconds(), Message: fmt.Sprintf("%s: working for %s", req.Params.Name, elapsed)})
			}
		}
	}()
	return func() { cancel(); <-done }
}

// readPath resolves a path the client gave (absolute, or relative to the
// first allowed folder) and refuses it unless it lies in an allowed folder.
func (s *server) readPath(p string) (string, error) {
	if p == "" {
		return "", errors.New("path is empty")
	}
	abs := p
	if !filepath.IsAbs(p) {
		abs = filepath.Join(s.roots[0], p)
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return "", fmt.Errorf("%s does not exist", p)
		}
		return "", fmt.Errorf("%s: %w", p, err)
	}
	if !s.allowed(real) {
		return "", fmt.Errorf("%s is outside the allowed folders (%s)", p, strings.Join(s.roots, ", "))
	}
	return real, nil
}

// writePath resolves a path to create: it must not exist yet, and its
// parent must lie in an allowed folder.
func (s *server) writePath(p string) (string, error) {
	abs := p
	if !filepath.IsAbs(p) {
		abs = filepath.Join(s.roots[0], p)
	}
	abs = filepath.Clean(abs)
	if _, err := os.Lstat(abs); err == nil {
		return "", fmt.Errorf("%s already exists; choose a new output folder", p)
	}
	parent, err := filepath.EvalSymlinks(filepath.Dir(abs))
	if err != nil {
		return "", fmt.Errorf("output %s: its folder: %w", p, err)
	}
	if !s.allowed(parent) {
		return "", fmt.Errorf("output %s is outside the allowed folders (%s)", p, strings.Join(s.roots, ", "))
	}
	return filepath.Join(parent, filepath.Base(abs)), nil
}

func (s *server) allowed(real string) bool {
	return slices.ContainsFunc(s.roots, func(root string) bool {
		rel, err := filepath.Rel(root, real)
		return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
	})
}

// checkTarget refuses a URL whose host is neither loopback nor allowed.
func (s *server) checkTarget(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return fmt.Errorf("target %q is not a URL (want http://127.0.0.1:PORT...)", raw)
	}
	host := u.Hostname()
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	if slices.Contains(s.targets, u.Host) || slices.Contains(s.targets, host) {
		return nil
	}
	return fmt.Errorf("target %s is not on loopback and not among the allowed targets (perfdoctor mcp --allow-target HOST:PORT)", u.Host)
}

// loadEvidence reads a bundle, folder or profile file once and keeps the
// last few read.
func (s *server) loadEvidence(ctx context.Context, path string) (*evidence.Evidence, error) {
	real, err := s.readPath(path)
	if err != nil {
		return nil, err
	}
	st, err := os.Stat(real)
	if err != nil {
		return nil, err
	}
	// A bundle is written into place by a rename, so its modification
	// time tells a new bundle at the same path from the one cached.
	key := real + "@" + st.ModTime().String()
	s.mu.Lock()
	for _, c := range s.cache {
		if c.key == key {
			s.mu.Unlock()
			return c.ev, nil
		}
	}
	s.mu.Unlock()
	ev, err := evidence.Load(ctx, evidence.LoadOptions{}, real)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.cache = append(s.cache, cachedEvidence{key, ev})
	if len(s.cache) > evidenceCacheSize {
		s.cache = s.cache[1:]
	}
	s.mu.Unlock()
	return ev, nil
}

// parseCursor reads a cursor given back by the client: the index of the
// next item.
func parseCursor(c string) (int, error) {
	if c == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(c)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("cursor %q is not one this server gave", c)
	}
	return n, nil
}

// fitPage sets as many items from start on (at most limit) as keep the
// answer within MaxAnswer, and the cursor of the rest. set fills the
// answer with a page and its next cursor; the answer is measured as JSON.
func fitPage[T any](items []T, start, limit int, answer any, set func(page []T, next string)) error {
	if start > len(items) {
		start = len(items)
	}
	n := min(limit, len(items)-start)
	for ; n >= 0; n-- {
		next := ""
		if start+n < len(items) {
			next = strconv.Itoa(start + n)
		}
		set(items[start:start+n], next)
		b, err := json.Marshal(answer)
		if err != nil {
			return err
		}
		if len(b) <= MaxAnswer-answerMargin {
			return nil
		}
	}
	return errors.New("even an empty page is over the answer's bound")
}

// answerMargin leaves room within MaxAnswer for what the SDK adds when it
// checks the answer against its schema (defaults are not added to output).
const answerMargin = 64

// clip shortens s to at most n bytes on a rune boundary, marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n - len("…")
	for cut > 0 && !utf8RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }

// oneLine keeps an error to its first line.
func oneLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}
