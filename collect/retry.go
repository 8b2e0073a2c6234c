package collect

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/pprof/profile"

	"github.com/perfdoctor/perfdoctor/bundle"
)

// Retries: a server at its own limit (a concurrency cap answering 503, a
// rate limit answering 429) is asked again after a pause, as long as the
// answer still fits: a timed profile inside its window (asking for the
// time left), any other item within the margin.
const (
	firstBackoff = 250 * time.Millisecond
	maxBackoff   = 4 * time.Second
	// minTimed is the shortest window a retried profile may ask for.
	minTimed = time.Second
)

// margin is how long past its own length an item may take: the server's
// work after the window (writing the profile, a slow network). Whatever a
// server does with `seconds`, no item outlives its window by more.
func (s *settings) margin() time.Duration {
	return min(s.Timeout, 5*time.Second+s.window/10)
}

// fetched is an item's response and how it was obtained.
type fetched struct {
	body     []byte
	attempts int
	// asked is the window the answering request asked for (timed items:
	// less than the item's length after retries).
	asked time.Duration
	// retried lists the answers that were retried, e.g. "503 Service Unavailable".
	retried []string
}

// note says, for the manifest, what the retries cost.
func (f fetched) note(it item) string {
	if f.attempts <= 1 {
		return ""
	}
	s := fmt.Sprintf("%s (retried after %s)", plural(f.attempts, "attempt"), strings.Join(compact(f.retried), ", "))
	if it.length > 0 && f.asked < it.length {
		s += fmt.Sprintf("; covers the last %s of the %s window", f.asked, it.length)
	}
	return s
}

// compact collapses repeated neighbours: ["503", "503", "429"] -> ["503 x2", "429"].
func compact(ss []string) []string {
	var out []string
	for i := 0; i < len(ss); {
		j := i
		for j < len(ss) && ss[j] == ss[i] {
			j++
		}
		if j-i > 1 {
			out = append(out, fmt.Sprintf("%s x%d", ss[i], j-i))
		} else {
			out = append(out, ss[i])
		}
		i = j
	}
	return out
}

// fetchItem gets an item's endpoint, retrying busy answers. A timed item
// (a profile over a window of it.length) asks on each attempt for the
// time left in its window and is cut off at the window's end plus the
// margin, whatever the server does with seconds.
func (c *collector) fetchItem(ctx context.Context, it item) (fetched, error) {
	start := time.Now()
	if it.length <= 0 {
		return c.getRetrying(ctx, start.Add(c.margin()), func() attempt {
			return attempt{c.endpointURL(it.endpoint, it.params), 0, c.Timeout}
		})
	}
	windowEnd := start.Add(it.length)
	bound := windowEnd.Add(c.margin())
	fractional := it.endpoint == "trace" // the trace takes fractions of a second
	step, shortest := time.Second, minTimed
	if fractional {
		step, shortest = 10*time.Millisecond, 100*time.Millisecond
	}
	retry := false
	f, err := c.getRetrying(ctx, windowEnd.Add(-shortest), func() attempt {
		if !retry {
			retry = true
			return attempt{c.endpointURL(it.endpoint, it.params), it.length, time.Until(bound)}
		}
		// A retry asks for the time left in the window.
		asked := max(time.Until(windowEnd).Truncate(step), shortest)
		params := url.Values{}
		for k, v := range it.params {
			params[k] = v
		}
		if fractional {
			params.Set("seconds", strconv.FormatFloat(asked.Seconds(), 'f', -1, 64))
		} else {
			params.Set("seconds", strconv.FormatInt(int64(asked/time.Second), 10))
		}
		return attempt{c.endpointURL(it.endpoint, params), asked, time.Until(bound)}
	})
	if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
		return f, &cleanError{fmt.Sprintf("no complete response within %s (the %s window and a %s margin): the server does not end the profile when asked to (seconds=%s)",
			time.Since(start).Round(100*time.Millisecond), it.length, c.margin(), it.params.Get("seconds")), err}
	}
	return f, err
}

// attempt is one request: its URL, the window it asks for (timed items)
// and the time it is allowed.
type attempt struct {
	u       *url.URL
	asked   time.Duration
	timeout time.Duration
}

// getRetrying makes attempts until one is answered other than busy, or
// the next would start after retryBy.
func (c *collector) getRetrying(ctx context.Context, retryBy time.Time, next func() attempt) (fetched, error) {
	var f fetched
	backoff := firstBackoff
	for {
		a := next()
		f.attempts++
		body, err := c.get(ctx, a.u, a.timeout, c.MaxBytes)
		var se *statusError
		if err == nil || !errors.As(err, &se) || !se.busy() {
			f.body, f.asked = body, a.asked
			if err != nil && f.attempts > 1 {
				err = fmt.Errorf("%w (attempt %d, after %s)", err, f.attempts, strings.Join(compact(f.retried), ", "))
			}
			return f, err
		}
		f.retried = append(f.retried, strconv.Itoa(se.code))
		wait := backoff
		backoff = min(2*backoff, maxBackoff)
		if d, ok := parseRetryAfter(se.retryAfter, time.Now()); ok {
			wait = d
		}
		if time.Now().Add(wait).After(retryBy) {
			why := "no retry fits in the window"
			if se.retryAfter != "" {
				why = "its Retry-After (" + se.retryAfter + ") is past the window"
			}
			return f, fmt.Errorf("%w (%s; %s)", err, plural(f.attempts, "attempt"), why)
		}
		c.Logger.Debug("server busy, retrying", "path", a.u.Path, "status", se.status, "wait", wait)
		if !sleep(ctx, wait) {
			return f, fmt.Errorf("%w (%w)", errInterrupted, ctx.Err())
		}
	}
}

// parseRetryAfter reads a Retry-After header: delay-seconds or an HTTP date.
func parseRetryAfter(h string, now time.Time) (time.Duration, bool) {
	h = strings.TrimSpace(h)
	if h == "" {
		return 0, false
	}
	if n, err := strconv.Atoi(h); err == nil && n >= 0 {
		return time.Duration(n) * time.Second, true
	}
	if t, err := http.ParseTime(h); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}

// deltaProfile names the profiles net/http/pprof serves as the difference
// over `seconds`; without it they count from the process's start.
var deltaProfile = map[string]bool{"mutex": true, "block": true, "allocs": true, "heap": true, "goroutine": true}

// twoSnapshots makes a window of a cumulative profile when the server
// ignored seconds: first (served at once) is the start, a second one
// taken at windowEnd the end, and the profile written is their
// difference, as net/http/pprof computes it.
func (c *collector) twoSnapshots(ctx context.Context, it item, path string, first *profile.Profile, windowEnd time.Time) (int64, *profile.Profile, error) {
	if !sleep(ctx, time.Until(windowEnd)) {
		return 0, nil, fmt.Errorf("%w (%w)", errInterrupted, ctx.Err())
	}
	end := it
	end.length, end.params = 0, nil
	f, err := c.fetchItem(ctx, end)
	if err != nil {
		return 0, nil, fmt.Errorf("the server ignored seconds; the end-of-window snapshot failed: %w", err)
	}
	last, err := parseProfile(f.body)
	if err != nil {
		return 0, nil, fmt.Errorf("the server ignored seconds; the end-of-window snapshot: %w", err)
	}
	start := first.Copy()
	start.Scale(-1)
	delta, err := profile.Merge([]*profile.Profile{start, last})
	if err != nil {
		return 0, nil, fmt.Errorf("the server ignored seconds; the difference of two snapshots: %w", err)
	}
	kept := delta.Sample[:0]
	for _, s := range delta.Sample {
		if slices.ContainsFunc(s.Value, func(v int64) bool { return v != 0 }) {
			kept = append(kept, s)
		}
	}
	delta.Sample = kept
	delta.TimeNanos = last.TimeNanos
	delta.DurationNanos = last.TimeNanos - first.TimeNanos
	if first.TimeNanos == 0 || last.TimeNanos <= first.TimeNanos {
		delta.DurationNanos = it.length.Nanoseconds()
	}
	c.addNote(it.name, fmt.Sprintf("the server ignored seconds: the difference of snapshots %s apart", time.Duration(delta.DurationNanos).Round(100*time.Millisecond)))
	n, err := bundle.WriteProfile(path, delta)
	return n, delta, err
}

// annotate records an item's attempts and what they cost.
func (c *collector) annotate(name string, attempts int, note string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if attempts > 1 {
		c.items[name].Attempts = attempts
	}
	c.items[name].AddNote(note)
}

// addNote adds to what the manifest says of an item's data.
func (c *collector) addNote(name, note string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.items[name].AddNote(note)
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}
