// Package a4config reproduces casebook case A4, reflection-serialization: an
// ad exchange ran json.Marshal of its configuration, which rarely changes, on
// every request. The fix was to marshal it once and refresh the encoded form
// when the configuration changes.
//
// The service answers each ad request with a small bid decision plus the
// exchange's settings document (campaigns, creatives, targeting, bidders:
// about 40 KB of JSON) that the client SDK applies. An updater publishes a
// new configuration version every UpdateEvery, as an operator's edits would.
//
//   - Bad: json.Marshal(config) on every request; encoding/json walks the
//     same nested structs through reflection each time.
//   - Fixed: the configuration is published together with its encoding
//     (an atomic.Pointer to both); the updater re-encodes once per change
//     and requests write the cached bytes.
//
// Both variants do the same per-request bid work (allocation-free hashing,
// split over three functions) so that the fixed variant's profile is the
// service's own work, not just socket writes.
//
// This is "any Go service": it imports nothing from perfdoctor.
package a4config

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Variants.
const (
	Bad   = "bad"
	Fixed = "fixed"
)

// UpdateEvery is how often the configuration changes.
const UpdateEvery = 2 * time.Second

// Sizes of the configuration and of the per-request work.
const (
	campaigns     = 60
	creativesPer  = 3
	bidders       = 12
	bidRounds     = 40 // rounds of each of the three per-request hashes
	configVersion = 1
)

// Config is the exchange's settings document. Its shape (nested structs,
// slices of strings and numbers, a few maps) is typical of such configs.
type Config struct {
	Version   int64             `json:"version"`
	UpdatedAt time.Time         `json:"updated_at"`
	Exchange  Exchange          `json:"exchange"`
	Campaigns []Campaign        `json:"campaigns"`
	Bidders   []Bidder          `json:"bidders"`
	Features  map[string]bool   `json:"features"`
	Labels    map[string]string `json:"labels"`
}

// Exchange holds auction settings.
type Exchange struct {
	Name          string   `json:"name"`
	Region        string   `json:"region"`
	AuctionType   int      `json:"auction_type"`
	TimeoutMillis int      `json:"timeout_ms"`
	FloorCPM      float64  `json:"floor_cpm"`
	Currencies    []string `json:"currencies"`
	BlockedCats   []string `json:"blocked_categories"`
}

// Campaign is one advertiser campaign.
type Campaign struct {
	ID          int64      `json:"id"`
	Name        string     `json:"name"`
	Advertiser  string     `json:"advertiser"`
	Status      string     `json:"status"`
	BidCPM      float64    `json:"bid_cpm"`
	DailyBudget float64    `json:"daily_budget"`
	Pacing      string     `json:"pacing"`
	Targeting   Targeting  `json:"targeting"`
	Creatives   []Creative `json:"creatives"`
	StartDate   string     `json:"start_date"`
	EndDate     string     `json:"end_date"`
	FreqCap     int        `json:"frequency_cap"`
}

// Targeting restricts where a campaign serves.
type Targeting struct {
	Countries []string `json:"countries"`
	OS        []string `json:"os"`
	Segments  []int    `json:"segments"`
	Hours     []int    `json:"hours"`
	MinAge    int      `json:"min_age"`
}

// Creative is one ad.
type Creative struct {
	ID      int64  `json:"id"`
	Width   int    `json:"w"`
	Height  int    `json:"h"`
	Format  string `json:"format"`
	URL     string `json:"url"`
	Approve bool   `json:"approved"`
}

// Bidder is a demand partner.
type Bidder struct {
	Name      string  `json:"name"`
	Endpoint  string  `json:"endpoint"`
	TimeoutMS int     `json:"timeout_ms"`
	QPS       int     `json:"qps"`
	Enabled   bool    `json:"enabled"`
	Margin    float64 `json:"margin"`
}

// snapshot is one published configuration and, in the fixed variant, its
// encoding.
type snapshot struct {
	cfg     *Config
	encoded []byte // nil in the bad variant
}

// Handler is the ad service. Close stops its updater.
type Handler struct {
	variant string
	cur     atomic.Pointer[snapshot]
	seq     atomic.Uint64

	stop     chan struct{}
	stopOnce sync.Once
	done     chan struct{}
}

// NewHandler builds the first configuration and starts the updater.
func NewHandler(variant string) (*Handler, error) {
	if variant != Bad && variant != Fixed {
		return nil, fmt.Errorf("a4config: unknown variant %q (want %q or %q)", variant, Bad, Fixed)
	}
	h := &Handler{variant: variant, stop: make(chan struct{}), done: make(chan struct{})}
	if err := h.publish(newConfig(configVersion)); err != nil {
		return nil, err
	}
	go h.update()
	return h, nil
}

// Close stops the updater.
func (h *Handler) Close() error {
	h.stopOnce.Do(func() { close(h.stop) })
	<-h.done
	return nil
}

// Version is the configuration version being served.
func (h *Handler) Version() int64 { return h.cur.Load().cfg.Version }

// publish makes cfg current. The fixed variant encodes it here, once per
// change; the bad variant leaves encoding to each request. A published
// Config is never modified again: the updater builds a new one.
func (h *Handler) publish(cfg *Config) error {
	s := &snapshot{cfg: cfg}
	if h.variant == Fixed {
		b, err := json.Marshal(cfg)
		if err != nil {
			return fmt.Errorf("a4config: encode config v%d: %w", cfg.Version, err)
		}
		s.encoded = b
	}
	h.cur.Store(s)
	return nil
}

// update publishes a new version every UpdateEvery: a budget changes.
func (h *Handler) update() {
	defer close(h.done)
	t := time.NewTicker(UpdateEvery)
	defer t.Stop()
	for {
		select {
		case <-h.stop:
			return
		case <-t.C:
			old := h.cur.Load().cfg
			cfg := newConfig(old.Version + 1)
			if err := h.publish(cfg); err != nil {
				panic(err) // the config's types always encode
			}
		}
	}
}

// ServeHTTP picks a bid for the request and answers with the bid line and
// the current settings document.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s := h.cur.Load()
	seq := h.seq.Add(1)
	best, campaign := bid(s.cfg, seq)

	var body []byte
	if h.variant == Bad {
		var err error
		if body, err = json.Marshal(s.cfg); err != nil { // every request
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
	} else {
		body = s.encoded // encoded once per version
	}
	var head [64]byte
	line := append(head[:0], "bid campaign="...)
	line = strconv.AppendInt(line, campaign, 10)
	line = append(line, " score="...)
	line = strconv.AppendUint(line, best, 16)
	line = append(line, '\n')
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Config-Version", strconv.FormatInt(s.cfg.Version, 10))
	w.Write(line)
	w.Write(body)
}

// bid scores every campaign for the request: the service's own work.
func bid(cfg *Config, seq uint64) (best uint64, campaign int64) {
	seed := seq * 0x9e3779b97f4a7c15
	for i := range cfg.Campaigns {
		c := &cfg.Campaigns[i]
		if i%(len(cfg.Campaigns)/4) != int(seq%uint64(len(cfg.Campaigns)/4)) {
			continue // a quarter of the campaigns match the request
		}
		name := c.Name
		s := relevance(name, seed) ^ affinity(name, seed) ^ pacing(name, seed)
		if s > best {
			best, campaign = s, c.ID
		}
	}
	return best, campaign
}

// relevance, affinity and pacing stand for the per-request bid logic:
// allocation-free, split in three (and not inlined) so that no single
// application function dominates the profile.

//go:noinline
func relevance(name string, seed uint64) uint64 {
	h := seed
	for range bidRounds {
		for i := 0; i < len(name); i++ {
			h = (h ^ uint64(name[i])) * 1099511628211
		}
	}
	return h
}

//go:noinline
func affinity(name string, seed uint64) uint64 {
	h := seed ^ 0x9e3779b97f4a7c15
	for range bidRounds {
		for i := 0; i < len(name); i++ {
			h = (h * 1099511628211) ^ uint64(name[i])
		}
	}
	return h
}

//go:noinline
func pacing(name string, seed uint64) uint64 {
	h := seed ^ 0xbf58476d1ce4e5b9
	for range bidRounds {
		for i := len(name) - 1; i >= 0; i-- {
			h = (h ^ uint64(name[i])) * 1099511628211
		}
	}
	return h
}

// newConfig builds version v of the settings document deterministically.
func newConfig(v int64) *Config {
	countries := []string{"US", "DE", "FR", "GB", "JP", "BR", "IN", "CN", "ES", "IT", "NL", "SE"}
	oses := []string{"ios", "android", "windows", "macos", "linux"}
	formats := []string{"banner", "video", "native", "interstitial"}
	statuses := []string{"active", "paused", "active", "active"}
	cfg := &Config{
		Version:   v,
		UpdatedAt: time.Date(2024, 11, 11, 0, 0, 0, 0, time.UTC).Add(time.Duration(v) * UpdateEvery),
		Exchange: Exchange{
			Name: "singles-day-exchange", Region: "cn-east-1", AuctionType: 2, TimeoutMillis: 120,
			FloorCPM: 0.35, Currencies: []string{"CNY", "USD", "EUR"},
			BlockedCats: []string{"IAB7-39", "IAB8-18", "IAB8-5", "IAB9-9", "IAB14-1", "IAB25", "IAB26"},
		},
		Features: map[string]bool{"first_price": true, "header_bidding": true, "gdpr": true, "ccpa": true, "schain": false},
		Labels:   map[string]string{"team": "exchange", "tier": "gold", "owner": "ads-infra"},
	}
	for i := range campaigns {
		id := int64(10_000 + i)
		c := Campaign{
			ID:          id,
			Name:        "campaign-" + strconv.Itoa(i) + "-singles-day-2024-megasale",
			Advertiser:  "advertiser-" + strconv.Itoa(i%17),
			Status:      statuses[i%len(statuses)],
			BidCPM:      0.5 + float64(i%37)*0.173,
			DailyBudget: 1000 + float64((int64(i)*7919+v*13)%50_000),
			Pacing:      "even",
			StartDate:   "2024-11-01",
			EndDate:     "2024-11-12",
			FreqCap:     3 + i%5,
			Targeting: Targeting{
				Countries: countries[i%4 : i%4+6],
				OS:        oses[:2+i%3],
				Segments:  []int{i, i * 3, i*7 + 1, 1000 + i, 2000 + i%11},
				Hours:     []int{8, 9, 10, 11, 12, 18, 19, 20, 21, 22},
				MinAge:    18,
			},
		}
		for k := range creativesPer {
			c.Creatives = append(c.Creatives, Creative{
				ID: id*10 + int64(k), Width: 300 + 20*k, Height: 250, Format: formats[(i+k)%len(formats)],
				URL: "https://cdn.example.com/creatives/" + strconv.FormatInt(id, 10) + "/" + strconv.Itoa(k) + ".jpg", Approve: true,
			})
		}
		cfg.Campaigns = append(cfg.Campaigns, c)
	}
	for i := range bidders {
		cfg.Bidders = append(cfg.Bidders, Bidder{
			Name: "dsp-" + strconv.Itoa(i), Endpoint: "https://dsp" + strconv.Itoa(i) + ".example.net/openrtb2/bid",
			TimeoutMS: 80 + i, QPS: 5000 + 100*i, Enabled: i%5 != 4, Margin: 0.1 + float64(i)*0.01,
		})
	}
	return cfg
}
