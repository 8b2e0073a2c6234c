// Package a2summary reproduces casebook case A2, metrics-summary-cost: an ad
// exchange timed each of ten request stages with a Prometheus Summary; the
// summaries' quantile streams (client_golang's asyncFlush over
// beorn7/perks/quantile merge and compress) took 48.6% of CPU. Keeping one
// quantile and switching the hottest metrics off halved CPU.
//
// Each request runs ten stages of bidding work and observes each stage's
// latency in its own metric of a real client_golang registry, served on
// /metrics of the same listener; its auction stage asks eight bidders and
// times each bidder's answer in a metric per bidder, as an exchange watches
// its demand partners.
//
//   - Bad: Summaries, each with six objectives (p50 .. p99.9).
//   - Fixed: Histograms (a bucket search and an atomic add per
//     observation; quantiles come from histogram_quantile at query time).
//
// This is "any Go service": it imports nothing from perfdoctor.
package a2summary

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Variants.
const (
	Bad   = "bad"
	Fixed = "fixed"
)

// Stages are the request's stages, one latency metric each.
var Stages = [10]string{
	"decode", "auth", "targeting", "budget", "frequency",
	"pricing", "auction", "render", "tracking", "encode",
}

// Bidders are the demand partners the auction stage asks, one latency
// metric each.
var Bidders = [8]string{"alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel"}

// auction is the stage that fans out to the bidders.
const auction = 6

// Objectives are the bad variant's quantiles and their allowed errors.
var Objectives = map[float64]float64{
	0.5: 0.05, 0.75: 0.02, 0.9: 0.01, 0.95: 0.005, 0.99: 0.001, 0.999: 0.0001,
}

// Handler is the ad service: "/" serves a bid, "/metrics" the registry.
type Handler struct {
	mux     *http.ServeMux
	stages  [len(Stages)]prometheus.Observer
	bidders [len(Bidders)]prometheus.Observer
}

// observerVec is what a SummaryVec and a HistogramVec have in common here.
type observerVec interface {
	prometheus.Collector
	WithLabelValues(...string) prometheus.Observer
}

// NewHandler registers the variant's latency metrics in a fresh registry.
func NewHandler(variant string) (*Handler, error) {
	if variant != Bad && variant != Fixed {
		return nil, fmt.Errorf("a2summary: unknown variant %q (want %q or %q)", variant, Bad, Fixed)
	}
	reg := prometheus.NewRegistry()
	newVec := func(name, help, label string) (observerVec, error) {
		var vec observerVec
		if variant == Bad {
			vec = prometheus.NewSummaryVec(prometheus.SummaryOpts{Name: name, Help: help, Objectives: Objectives}, []string{label})
		} else {
			vec = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help,
				Buckets: prometheus.ExponentialBuckets(1e-6, 2, 16)}, []string{label}) // 1µs .. 33ms
		}
		return vec, reg.Register(vec)
	}
	stages, err := newVec("bid_stage_duration_seconds", "Time spent in each stage of a bid request.", "stage")
	if err != nil {
		return nil, err
	}
	bidders, err := newVec("bidder_response_seconds", "Time each bidder took to answer the auction.", "bidder")
	if err != nil {
		return nil, err
	}
	h := &Handler{mux: http.NewServeMux()}
	for i, s := range Stages {
		h.stages[i] = stages.WithLabelValues(s)
	}
	for i, b := range Bidders {
		h.bidders[i] = bidders.WithLabelValues(b)
	}
	h.mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	h.mux.HandleFunc("/", h.bid)
	return h, nil
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.mux.ServeHTTP(w, r) }

// Work per stage, the same in both variants.
const stageRounds = 192

// bid runs the stages, timing each.
func (h *Handler) bid(w http.ResponseWriter, r *http.Request) {
	v := rand.Uint64()
	for i, obs := range h.stages {
		start := time.Now()
		switch i % 3 {
		case 0:
			v = mixA(v)
		case 1:
			v = mixB(v)
		default:
			v = mixC(v)
		}
		if i == auction {
			v = h.askBidders(v)
		}
		obs.Observe(time.Since(start).Seconds())
	}
	buf := make([]byte, 0, 32)
	buf = append(buf, "bid="...)
	buf = strconv.AppendUint(buf, v%5_000_000, 10)
	buf = append(buf, '\n')
	w.Header().Set("Content-Type", "text/plain")
	w.Write(buf)
}

// askBidders stands for the auction's calls to its bidders, timing each.
func (h *Handler) askBidders(v uint64) uint64 {
	for _, obs := range h.bidders {
		start := time.Now()
		v = mixB(v)
		obs.Observe(time.Since(start).Seconds())
	}
	return v
}

// mixA, mixB and mixC stand for the stages' own work: allocation-free,
// split in three (not inlined) so no single function dominates the profile.
//
//go:noinline
func mixA(h uint64) uint64 {
	for range stageRounds {
		h ^= h >> 33
		h *= 0xff51afd7ed558ccd
		h ^= h >> 29
	}
	return h
}

//go:noinline
func mixB(h uint64) uint64 {
	for range stageRounds {
		h = (h ^ (h >> 30)) * 0x94d049bb133111eb
		h ^= h >> 31
	}
	return h
}

//go:noinline
func mixC(h uint64) uint64 {
	for range stageRounds {
		h = (h ^ (h >> 27)) * 0x2545f4914f6cdd1d
		h += h << 13
	}
	return h
}
