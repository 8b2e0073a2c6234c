package facts

import (
	"time"

	"github.com/perfdoctor/perfdoctor/evidence"
)

// Queue is what the load's own measurements say about requests queueing
// inside the service, by Little's law: how many were in flight, how many the
// service worked on at once, and the share of their time spent waiting for
// their turn. OK is false when the load did not measure latency (a command
// load), failed too often, or has no percentile table to read the fastest
// request from.
type Queue struct {
	OK bool `json:"ok"`
	// InFlight is the requests in flight on average, throughput × mean
	// latency (a closed loop's workers, less their time between requests).
	InFlight float64 `json:"in_flight"`
	// Throughput is the requests served per second.
	Throughput float64 `json:"throughput"`
	// Fastest is the fastest request of the run: its service time with no
	// wait for a turn (in a queue served in order, only a request that found
	// a free slot is this fast), a lower bound on the mean service time.
	Fastest time.Duration `json:"fastest_ns"`
	// Mean is the mean latency, from the send.
	Mean time.Duration `json:"mean_ns"`
	// InService is throughput × Fastest: at most the requests the service
	// worked on at once (the slots of whatever bounds it, when it is
	// saturated), a lower bound since Fastest is.
	InService float64 `json:"in_service"`
	// WaitShare is 1 − Fastest / Mean: the share of request time spent
	// beyond the service time, waiting for a turn (a pool, a lock, a CPU).
	WaitShare float64 `json:"wait_share"`
}

// maxErrorShare is the share of failed requests above which the load's
// latencies describe the errors as much as the service.
const maxErrorShare = 0.01

// LoadQueue reads the load that ran in the window (perfdoctor run, verify's
// rounds kept in a bundle) for queueing: requests in flight, served at once,
// and the time they waited for a turn.
var LoadQueue = &Fact[Queue]{
	Name: "load-queue",
	Doc:  "Queueing seen from the load, by Little's law: requests in flight, the fastest request (service time without a wait), requests served at once (throughput × fastest) and the share of latency spent waiting for a turn (1 − fastest / mean).",
	Compute: func(p *Pass) Queue {
		return loadQueue(p.Evidence)
	},
}

func loadQueue(ev *evidence.Evidence) Queue {
	l := ev.Load
	if l == nil || l.Throughput <= 0 || l.Service.Mean <= 0 || l.Requests <= 0 {
		return Queue{}
	}
	if float64(l.Errors) > maxErrorShare*float64(l.Requests) {
		return Queue{}
	}
	fastest := -1.0
	for _, q := range l.Table {
		if q.Percentile == 0 {
			fastest = q.MS
			break
		}
	}
	if fastest <= 0 || fastest > l.Service.Mean {
		return Queue{}
	}
	q := Queue{
		OK:         true,
		Throughput: l.Throughput,
		Fastest:    ms(fastest),
		Mean:       ms(l.Service.Mean),
		InService:  l.Throughput * fastest / 1000,
		WaitShare:  1 - fastest/l.Service.Mean,
		InFlight:   l.Throughput * l.Service.Mean / 1000,
	}
	return q
}

func ms(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }
