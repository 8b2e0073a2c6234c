// Command ingest is a small metrics ingest service for NET007's recorded
// cases: POST /ingest takes samples in a line protocol ("name value", one a
// line) and adds each to an in-memory counter per series. A client may send
// one sample per request or many; the handler's work per sample (parse a
// line, add under a shard's lock) is the same either way, so what batching
// changes is how many requests carry it. /debug/pprof is on the same port.
package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"hash/fnv"
	"log"
	"net/http"
	_ "net/http/pprof"
	"strconv"
	"sync"
)

const shards = 64

type store struct {
	shard [shards]struct {
		sync.Mutex
		sums map[string]float64
	}
}

func newStore() *store {
	s := &store{}
	for i := range s.shard {
		s.shard[i].sums = map[string]float64{}
	}
	return s
}

func (s *store) add(name []byte, v float64) {
	h := fnv.New32a()
	h.Write(name)
	sh := &s.shard[h.Sum32()%shards]
	sh.Lock()
	sh.sums[string(name)] += v
	sh.Unlock()
}

// ingest parses the body's lines and adds each sample; it answers how many
// it took.
func (s *store) ingest(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "POST samples, one per line", http.StatusMethodNotAllowed)
		return
	}
	sc := bufio.NewScanner(r.Body)
	n := 0
	for sc.Scan() {
		name, value, ok := bytes.Cut(sc.Bytes(), []byte{' '})
		if !ok {
			http.Error(w, fmt.Sprintf("line %d: want \"name value\"", n+1), http.StatusBadRequest)
			return
		}
		v, err := strconv.ParseFloat(string(value), 64)
		if err != nil {
			http.Error(w, fmt.Sprintf("line %d: %v", n+1, err), http.StatusBadRequest)
			return
		}
		s.add(name, v)
		n++
	}
	if err := sc.Err(); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "listen address")
	flag.Parse()
	s := newStore()
	http.HandleFunc("/ingest", s.ingest)
	log.Fatal(http.ListenAndServe(*addr, nil))
}
