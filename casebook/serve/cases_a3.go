package serve

import (
	"net/http"

	"github.com/perfdoctor/perfdoctor/casebook/a3sched"
)

func init() {
	Register(Case{Name: "a3", Class: "scheduler-overhead", Title: "A3: GOMAXPROCS far above the CPUs, with many short goroutine handoffs",
		Build: func(variant string, opts Options) (http.Handler, func() error, error) {
			// Setup may re-execute the process with GOMAXPROCS in its
			// environment (same PID and arguments): it runs before any
			// listener is opened.
			restore, err := a3sched.Setup(variant, opts.Reexec())
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
