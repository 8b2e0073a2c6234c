package serve

import (
	"net/http"

	"github.com/perfdoctor/perfdoctor/casebook/r4fanout"
)

func init() {
	// The oversubscription is the cause of the scheduler time the fan-out
	// shows, and of what GC cost remains at GOGC=2000: every cycle starts
	// mark workers on the idle Ps, 62 of 64 here.
	Register(Case{Name: "r4", Class: "scheduler-overhead",
		Below: map[string]string{"goroutine-churn": "scheduler-overhead", "gc-pressure": "scheduler-overhead"},
		Title: "R4: a per-request fan-out of 3 goroutines under GOMAXPROCS=64 on 2 CPUs",
		Build: func(variant string, opts Options) (http.Handler, func() error, error) {
			// Setup may re-execute the process with GOMAXPROCS in its
			// environment: it runs before any listener is opened.
			restore, err := r4fanout.Setup(variant, opts.Reexec())
			if err != nil {
				return nil, nil, err
			}
			h, err := r4fanout.NewHandler(variant)
			if err != nil {
				restore()
				return nil, nil, err
			}
			return h, func() error { restore(); return nil }, nil
		}})
}
