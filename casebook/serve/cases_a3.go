package serve

import (
	"net/http"

	"github.com/perfdoctor/perfdoctor/casebook/a3sched"
)

func init() {
	Register(Case{Name: "a3", Class: "scheduler-overhead", Title: "A3: GOMAXPROCS far above the CPUs, with many short goroutine handoffs",
		Pending: "the bad variant now comes out scheduler-overhead at high, but the fixed variant's own scheduler share (GOMAXPROCS=2, many handoffs) reaches 9% under the e2e load, which SCHED001 grades medium: the fixed variant needs fewer handoffs, or SCHED001 a floor that depends on the handoff rate",
		Build: func(variant string, _ Options) (http.Handler, func() error, error) {
			// Setup may re-execute the process with GOMAXPROCS in its
			// environment (same PID and arguments): it runs before any
			// listener is opened.
			restore, err := a3sched.Setup(variant)
			if err != nil {
				return nil, nil, err
			}
			h, err := a3sched.NewHandler(variant)
			if err != nil {
				restore()
				return nil, nil, err
			}
			return h, func() error { restore(); return h.Close() }, nil
		}})
}
