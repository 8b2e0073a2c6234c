// Command svc is the service CFG001's fixtures are recorded from: a
// catalogue lookup over net/http that keeps a pointer-rich index in memory
// (the live heap the collector marks every cycle), allocates a response's
// worth of small objects per request, can cache its rendered answers, and
// logs through log/slog at the level it is given. record.sh starts it with
// the settings under test: GOGC, GOMEMLIMIT, -disable-cache, -log-level.
package main

import (
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"log"
	"log/slog"
	"net/http"
	_ "net/http/pprof"
	"os"
	"strconv"
	"sync"
)

// item is one catalogue entry; the index holds them through pointers so
// every GC cycle marks them.
type item struct {
	id    int
	name  string
	tags  []string
	next  *item
	price float64
}

type server struct {
	index        map[int]*item
	items        int
	perRequest   int // objects allocated per request
	rounds       int // hashing rounds of the rendering
	disableCache bool
	mu           sync.Mutex
	cache        map[int]string
	log          *slog.Logger
}

func main() {
	listen := flag.String("listen", "127.0.0.1:8080", "address to serve on")
	pprofAddr := flag.String("pprof", "127.0.0.1:6060", "address of net/http/pprof")
	liveMB := flag.Int("live-mb", 32, "size of the in-memory index in MiB (the live heap)")
	perRequest := flag.Int("objects", 2000, "small objects allocated per request")
	rounds := flag.Int("rounds", 200, "hashing rounds to render one answer (what the cache saves)")
	disableCache := flag.Bool("disable-cache", false, "render every answer again instead of caching it")
	level := flag.String("log-level", "info", "log level: debug, info, warn or error")
	logFile := flag.String("log-file", os.DevNull, "file the log goes to")
	flag.Parse()

	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(*level)); err != nil {
		log.Fatalf("svc: -log-level %q: %v", *level, err)
	}
	out, err := os.OpenFile(*logFile, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		log.Fatalf("svc: %v", err)
	}
	s := &server{perRequest: *perRequest, rounds: *rounds, disableCache: *disableCache, cache: map[int]string{},
		log: slog.New(slog.NewTextHandler(out, &slog.HandlerOptions{Level: lvl}))}
	s.build(*liveMB << 20)

	go func() { log.Println(http.ListenAndServe(*pprofAddr, nil)) }()
	mux := http.NewServeMux()
	mux.HandleFunc("/item", s.handle)
	log.Fatal(http.ListenAndServe(*listen, mux))
}

// build fills the index with about size bytes of items.
func (s *server) build(size int) {
	const perItem = 160 // item, its name and two tags, roughly
	s.items = max(size/perItem, 1)
	s.index = make(map[int]*item, s.items)
	var prev *item
	for i := range s.items {
		it := &item{id: i, name: "item-" + strconv.Itoa(i), tags: []string{"t" + strconv.Itoa(i%97), "c" + strconv.Itoa(i%13)}, next: prev, price: float64(i%1000) / 10}
		s.index[i] = it
		prev = it
	}
}

type line struct {
	id    int
	label string
	score float64
}

func (s *server) handle(w http.ResponseWriter, r *http.Request) {
	id, _ := strconv.Atoi(r.URL.Query().Get("id"))
	id %= 64 // a small working set: the answers repeat, so a cache hits
	it := s.index[id]
	s.log.Debug("request", "path", r.URL.Path, "id", id, "remote", r.RemoteAddr, "agent", r.UserAgent())
	s.log.Debug("item found", "id", it.id, "name", it.name, "tags", it.tags, "price", it.price)

	// A response's worth of short-lived objects, as decoding and building
	// a reply make them.
	lines := make([]*line, 0, s.perRequest)
	for i := range s.perRequest {
		lines = append(lines, &line{id: i, label: it.tags[i%len(it.tags)], score: float64(i) * it.price})
	}
	s.log.Debug("lines built", "count", len(lines), "first", lines[0].label, "last", lines[len(lines)-1].label)

	answer := s.answer(it)
	s.log.Debug("answer rendered", "id", id, "answer", answer, "cached", !s.disableCache)
	fmt.Fprintf(w, "%d %s %s %d\n", it.id, it.name, answer, len(lines))
}

// answer renders an item's answer, from the cache unless it is disabled.
func (s *server) answer(it *item) string {
	if !s.disableCache {
		s.mu.Lock()
		a, ok := s.cache[it.id]
		s.mu.Unlock()
		if ok {
			return a
		}
	}
	sum := sha256.Sum256([]byte(it.name))
	for range s.rounds {
		sum = sha256.Sum256(sum[:])
	}
	a := hex.EncodeToString(sum[:8])
	if !s.disableCache {
		s.mu.Lock()
		s.cache[it.id] = a
		s.mu.Unlock()
	}
	return a
}
