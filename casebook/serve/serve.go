// Package serve runs a casebook variant as a service: the case's handler on an
// app listener and the net/http/pprof endpoints on a separate (loopback by
// default) listener. It is shared by cmd/casebook and `perfdoctor demo`.
//
// Start changes process-wide state (the D1 fixed variant's GC settings), so
// run one service per process.
package serve

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"sync"
	"time"
)

// Variants accepted by Start.
var Variants = []string{"bad", "fixed"}

// DefaultAddr is used for an empty listen address: loopback, any port.
const DefaultAddr = "127.0.0.1:0"

// Option configures Start.
type Option func(*Options)

// Options are the settings a case's Build receives.
type Options struct {
	downstream string
	reexec     bool
}

// Downstream is the address given with WithDownstream, if any.
func (o Options) Downstream() string { return o.downstream }

// Reexec reports whether the case may re-execute the process (WithReexec).
func (o Options) Reexec() bool { return o.reexec }

// WithReexec lets a case that needs its runtime settings in the process
// environment (A3's GOMAXPROCS, where /proc shows them as in production)
// re-execute the process with them; only a process that runs nothing but
// this service should allow it. Without it the case applies the settings
// in-process.
func WithReexec() Option { return func(o *Options) { o.reexec = true } }

// WithDownstream sets the downstream (host:port) of the cases that send to
// one (D2's UDP, C3's TCP) instead of their built-in sink. Others ignore it.
func WithDownstream(addr string) Option { return func(o *Options) { o.downstream = addr } }

// UDPIngress is implemented by a case handler that also serves datagrams
// (a UDP forwarder): its HTTP side is then only a status page, and the load
// goes to UDPAddr.
type UDPIngress interface {
	UDPAddr() string
}

// Service is a running casebook variant.
type Service struct {
	Case, Variant string
	AppURL        string // http://host:port of the case handler
	PprofURL      string // http://host:port serving /debug/pprof/
	// UDPAddr is host:port of the case's UDP ingress, for a case whose
	// handler also serves UDP (it implements UDPIngress); "" otherwise.
	UDPAddr string

	app, prof *http.Server
	closer    func() error // case cleanup (D2 sink and sockets)
	closeOnce sync.Once
	closeErr  error
	done      chan struct{}
	errMu     sync.Mutex
	serveErr  error
}

// Start builds the case's handler, applies the variant's runtime settings,
// and serves until ctx is done or Close is called. Empty addresses mean
// DefaultAddr.
func Start(ctx context.Context, caseName, variant, appAddr, pprofAddr string, opts ...Option) (*Service, error) {
	var o Options
	for _, opt := range opts {
		opt(&o)
	}
	c, ok := registry[caseName]
	if !ok {
		return nil, fmt.Errorf("serve: unknown case %q (want one of %v)", caseName, Cases())
	}
	h, closer, err := c.Build(variant, o)
	if err != nil {
		return nil, err
	}
	if closer == nil {
		closer = func() error { return nil }
	}

	appLn, err := listen(appAddr)
	if err != nil {
		closer()
		return nil, fmt.Errorf("serve: app listener: %w", err)
	}
	profLn, err := listen(pprofAddr)
	if err != nil {
		appLn.Close()
		closer()
		return nil, fmt.Errorf("serve: pprof listener: %w", err)
	}

	s := &Service{
		Case: caseName, Variant: variant,
		AppURL:   "http://" + appLn.Addr().String(),
		PprofURL: "http://" + profLn.Addr().String(),
		// No write timeout on either: /debug/pprof/profile streams for as
		// long as asked, and the app is loaded by trusted local clients.
		app:    &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second},
		prof:   &http.Server{Handler: pprofMux(), ReadHeaderTimeout: 10 * time.Second},
		closer: closer,
		done:   make(chan struct{}),
	}
	if u, ok := h.(UDPIngress); ok {
		s.UDPAddr = u.UDPAddr()
	}
	go s.serve(s.app, appLn)
	go s.serve(s.prof, profLn)
	go func() {
		select {
		case <-ctx.Done():
			s.Close()
		case <-s.done:
		}
	}()
	return s, nil
}

func listen(addr string) (net.Listener, error) {
	if addr == "" {
		addr = DefaultAddr
	}
	return net.Listen("tcp", addr)
}

// pprofMux mounts the same endpoints `import _ "net/http/pprof"` registers on
// http.DefaultServeMux, on a private mux so nothing else leaks onto it.
func pprofMux() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index) // also heap, allocs, goroutine, block, mutex...
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return mux
}

func (s *Service) serve(srv *http.Server, ln net.Listener) {
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		s.errMu.Lock()
		if s.serveErr == nil {
			s.serveErr = err
		}
		s.errMu.Unlock()
		go s.Close() // one listener failing ends the service
	}
}

// ReadyLine is the line cmd/casebook prints once serving:
// "ready app=http://127.0.0.1:PORT pprof=http://127.0.0.1:PORT", followed
// by " udp=127.0.0.1:PORT" for a case with a UDP ingress.
func (s *Service) ReadyLine() string {
	line := "ready app=" + s.AppURL + " pprof=" + s.PprofURL
	if s.UDPAddr != "" {
		line += " udp=" + s.UDPAddr
	}
	return line
}

// Close stops both servers (waiting up to 2 s for in-flight requests) and
// releases the case's resources. It is safe to call more than once.
func (s *Service) Close() error {
	s.closeOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		var errs []error
		for _, srv := range []*http.Server{s.app, s.prof} {
			if err := srv.Shutdown(ctx); err != nil {
				srv.Close() // e.g. a long profile still streaming
			}
		}
		if err := s.closer(); err != nil {
			errs = append(errs, fmt.Errorf("serve: close %s: %w", s.Case, err))
		}
		s.closeErr = errors.Join(errs...)
		close(s.done)
	})
	return s.closeErr
}

// Done is closed once the service has stopped.
func (s *Service) Done() <-chan struct{} { return s.done }

// Wait blocks until the service stops and returns the first serving error, if
// any, or the error from closing.
func (s *Service) Wait() error {
	<-s.done
	s.errMu.Lock()
	defer s.errMu.Unlock()
	if s.serveErr != nil {
		return fmt.Errorf("serve: %w", s.serveErr)
	}
	return s.closeErr
}
