package lib004

import (
	"bytes"
	stdflate "compress/flate"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"math/rand"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"
)

// apiJSON is a 64 KB API response: a page of orders as encoding/json writes it.
func apiJSON() []byte {
	type item struct {
		SKU      string  `json:"sku"`
		Name     string  `json:"name"`
		Quantity int     `json:"quantity"`
		Price    float64 `json:"price"`
	}
	type order struct {
		ID        string `json:"id"`
		Customer  string `json:"customer"`
		Email     string `json:"email"`
		Status    string `json:"status"`
		CreatedAt string `json:"created_at"`
		Items     []item `json:"items"`
		Total     float64
	}
	r := rand.New(rand.NewSource(7))
	names := []string{"Alice Martin", "Bob Chen", "Carla Diaz", "Dmitri Ivanov", "Eve Okafor", "Farah Khan"}
	products := []string{"USB-C cable 2m", "Wireless mouse", "Mechanical keyboard", "27in monitor", "Laptop stand", "Webcam 1080p"}
	statuses := []string{"pending", "paid", "shipped", "delivered", "refunded"}
	var orders []order
	for {
		o := order{ID: fmt.Sprintf("ord_%08x", r.Uint32()), Customer: names[r.Intn(len(names))], Status: statuses[r.Intn(len(statuses))],
			CreatedAt: fmt.Sprintf("2026-%02d-%02dT%02d:%02d:%02dZ", 1+r.Intn(12), 1+r.Intn(28), r.Intn(24), r.Intn(60), r.Intn(60))}
		o.Email = fmt.Sprintf("user%d@example.com", r.Intn(100000))
		for range 1 + r.Intn(4) {
			it := item{SKU: fmt.Sprintf("SKU-%05d", r.Intn(50000)), Name: products[r.Intn(len(products))], Quantity: 1 + r.Intn(3), Price: float64(r.Intn(50000)) / 100}
			o.Items = append(o.Items, it)
			o.Total += it.Price * float64(it.Quantity)
		}
		orders = append(orders, o)
		b, _ := json.Marshal(orders)
		if len(b) >= 64<<10 {
			return b
		}
	}
}

// payloads are what services compress: an API's JSON, source text (HTML, Go),
// and a minified script, from the Go installation here.
func payloads(tb testing.TB) map[string][]byte {
	root := runtime.GOROOT()
	read := func(rel string, limit int) []byte {
		b, err := os.ReadFile(filepath.Join(root, rel))
		if err != nil {
			tb.Skipf("payload: %v", err)
		}
		return b[:min(limit, len(b))]
	}
	return map[string][]byte{
		"api-json-64KB":   apiJSON(),
		"html-128KB":      read("src/internal/trace/traceviewer/static/trace_viewer_full.html", 128<<10),
		"go-source-128KB": read("src/net/http/server.go", 128<<10),
		"min-js-116KB":    read("src/internal/trace/traceviewer/static/webcomponents.min.js", 128<<10),
	}
}

// BenchmarkLevels measures compress/flate's throughput and ratio per level on
// each payload, reusing one writer (Reset) as a tuned service would. Its
// figures are the table in the rule's Fix and docs/rules.
func BenchmarkLevels(b *testing.B) {
	for name, p := range payloads(b) {
		for _, level := range []int{1, 2, 4, 6, 9} {
			b.Run(fmt.Sprintf("%s/level-%d", name, level), func(b *testing.B) {
				var out bytes.Buffer
				zw, _ := stdflate.NewWriter(&out, level)
				b.SetBytes(int64(len(p)))
				for b.Loop() {
					out.Reset()
					zw.Reset(&out)
					zw.Write(p)
					zw.Close()
				}
				b.ReportMetric(float64(len(p))/float64(out.Len()), "ratio")
			})
		}
	}
}

// BenchmarkWriterPerCall measures a fresh gzip writer per response against
// one reused from a sync.Pool, on the API payload at DefaultCompression.
func BenchmarkWriterPerCall(b *testing.B) {
	p := apiJSON()
	b.Run("new-writer", func(b *testing.B) {
		b.SetBytes(int64(len(p)))
		b.ReportAllocs()
		for b.Loop() {
			zw := gzip.NewWriter(io.Discard)
			zw.Write(p)
			zw.Close()
		}
	})
	b.Run("pooled-writer", func(b *testing.B) {
		pool := sync.Pool{New: func() any { return gzip.NewWriter(io.Discard) }}
		b.SetBytes(int64(len(p)))
		b.ReportAllocs()
		for b.Loop() {
			zw := pool.Get().(*gzip.Writer)
			zw.Reset(io.Discard)
			zw.Write(p)
			zw.Close()
			pool.Put(zw)
		}
	})
}

// BenchmarkStaticFile measures a static file handler that gzips the file
// per request (as a compressing middleware in front of a file server does)
// against one serving a copy compressed once.
func BenchmarkStaticFile(b *testing.B) {
	file := payloads(b)["min-js-116KB"]
	var pre bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&pre, gzip.DefaultCompression)
	zw.Write(file)
	zw.Close()
	perRequest := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Encoding", "gzip")
		zw := gzip.NewWriter(w)
		http.ServeContent(zw2rw{w, zw}, r, "app.js", time.Time{}, bytes.NewReader(file))
		zw.Close()
	})
	precompressed := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Encoding", "gzip")
		http.ServeContent(w, r, "app.js", time.Time{}, bytes.NewReader(pre.Bytes()))
	})
	for _, h := range []struct {
		name string
		h    http.Handler
	}{{"gzip-per-request", perRequest}, {"precompressed", precompressed}} {
		b.Run(h.name, func(b *testing.B) {
			req := httptest.NewRequest("GET", "/app.js", nil)
			for b.Loop() {
				h.h.ServeHTTP(httptest.NewRecorder(), req)
			}
		})
	}
}

// zw2rw is a ResponseWriter whose body goes through a gzip writer.
type zw2rw struct {
	http.ResponseWriter
	zw *gzip.Writer
}

func (w zw2rw) Write(p []byte) (int, error) { return w.zw.Write(p) }
