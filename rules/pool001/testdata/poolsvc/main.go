// Command poolsvc is the service behind pool001's recorded cases: an HTTP
// API whose every request waits on a slow dependency through a bounded
// pool, the way services nobody here wrote do it.
//
//	poolsvc -listen ADDR -db DSN -max-open N        database/sql (pgx) with SetMaxOpenConns(N)
//	poolsvc -listen ADDR -backend URL -per-host N   net/http's client, Transport.MaxConnsPerHost = N
//	poolsvc -listen ADDR -backend URL -limit N      a buffered channel as a semaphore of N
//	poolsvc -serve-backend ADDR -delay D            the dependency: answers every request after D
//
// The service serves /debug/pprof on -pprof ADDR. It prints "ready" once
// it listens.
package main

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	_ "net/http/pprof"
	"os"
	"strconv"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "poolsvc:", err)
		os.Exit(1)
	}
}

func run() error {
	listen := flag.String("listen", "", "address of the API")
	pprofAddr := flag.String("pprof", "", "address of /debug/pprof")
	dsn := flag.String("db", "", "PostgreSQL data source: the API reads items through database/sql")
	maxOpen := flag.Int("max-open", 0, "database/sql's SetMaxOpenConns (0: unlimited)")
	backend := flag.String("backend", "", "URL of the dependency the API calls over HTTP")
	perHost := flag.Int("per-host", 0, "http.Transport.MaxConnsPerHost for the dependency (0: unlimited)")
	limit := flag.Int("limit", 0, "calls to the dependency at once, through a channel used as a semaphore (0: no limit)")
	serveBackend := flag.String("serve-backend", "", "run the dependency on this address instead")
	delay := flag.Duration("delay", 20*time.Millisecond, "the dependency's time per request")
	flag.Parse()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))

	if *serveBackend != "" {
		return serve(*serveBackend, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			time.Sleep(*delay)
			io.WriteString(w, "42.17\n")
		}))
	}
	if *listen == "" || (*dsn == "") == (*backend == "") {
		return errors.New("want -listen and one of -db or -backend")
	}
	if *pprofAddr != "" {
		go func() {
			if err := http.ListenAndServe(*pprofAddr, nil); err != nil {
				log.Error("pprof", "err", err)
			}
		}()
	}
	mux := http.NewServeMux()
	if *dsn != "" {
		db, err := sql.Open("pgx", *dsn)
		if err != nil {
			return fmt.Errorf("open the database: %w", err)
		}
		defer db.Close()
		db.SetMaxOpenConns(*maxOpen)
		db.SetMaxIdleConns(max(*maxOpen, 2))
		items := &itemStore{db: db}
		mux.HandleFunc("GET /items/{id}", items.get)
	} else {
		client := &http.Client{Transport: &http.Transport{MaxConnsPerHost: *perHost, MaxIdleConnsPerHost: 256}}
		q := &quotes{client: client, url: *backend}
		if *limit > 0 {
			q.sem = make(chan struct{}, *limit)
		}
		mux.HandleFunc("GET /quote", q.get)
	}
	return serve(*listen, mux)
}

func serve(addr string, h http.Handler) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	fmt.Println("ready")
	return http.Serve(ln, h)
}

// itemStore reads items through database/sql.
type itemStore struct{ db *sql.DB }

func (s *itemStore) get(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil {
		http.Error(w, "bad id", http.StatusBadRequest)
		return
	}
	var name, price string
	err = s.db.QueryRowContext(r.Context(), "select name, price::text from find_item($1)", id).Scan(&name, &price)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	fmt.Fprintf(w, "{\"id\":%d,\"name\":%q,\"price\":%s}\n", id, name, price)
}

// quotes asks the dependency for a price per request.
type quotes struct {
	client *http.Client
	url    string
	sem    chan struct{} // nil: no limit
}

func (q *quotes) get(w http.ResponseWriter, r *http.Request) {
	if q.sem != nil {
		q.sem <- struct{}{}
		defer func() { <-q.sem }()
	}
	price, err := q.price(r.Context())
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	fmt.Fprintf(w, "{\"symbol\":\"ACME\",\"price\":%s}\n", price)
}

func (q *quotes) price(ctx context.Context) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, q.url, nil)
	if err != nil {
		return "", err
	}
	resp, err := q.client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	return string(b[:len(b)-1]), nil
}
