package agent

import (
	"errors"
	"fmt"
	"os"
	"runtime/trace"
	"sync/atomic"
	"time"
)

// flightOwned is set while an agent of this process runs the flight
// recorder: the runtime allows one per process, and the agent owns it.
var flightOwned atomic.Bool

// errFlightTaken is why a second agent in one process records no flight.
var errFlightTaken = errors.New("another agent in this process owns the flight recorder")

// flightRecorder keeps the last seconds of execution trace in memory so a
// capture can include what led up to its trigger.
type flightRecorder struct {
	fr  *trace.FlightRecorder
	age time.Duration
}

// FlightStatus is the flight recorder's state, served in Status.
type FlightStatus struct {
	On       bool          `json:"on"`
	MinAge   time.Duration `json:"min_age_ns,omitempty"`
	MaxBytes uint64        `json:"max_bytes,omitempty"`
	Error    string        `json:"error,omitempty"` // why it is off
}

func startFlight(age time.Duration, maxBytes uint64) (*flightRecorder, error) {
	if !flightOwned.CompareAndSwap(false, true) {
		return nil, errFlightTaken
	}
	fr := trace.NewFlightRecorder(trace.FlightRecorderConfig{MinAge: age, MaxBytes: maxBytes})
	if err := fr.Start(); err != nil {
		flightOwned.Store(false)
		return nil, fmt.Errorf("flight recorder: %w", err)
	}
	return &flightRecorder{fr: fr, age: age}, nil
}

// snapshot writes the recorded window, which ends now, to path.
func (f *flightRecorder) snapshot(path string) error {
	return writeTo(path, func(file *os.File) error {
		_, err := f.fr.WriteTo(file)
		return err
	})
}

func (f *flightRecorder) stop() {
	f.fr.Stop()
	flightOwned.Store(false)
}
