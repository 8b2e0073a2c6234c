package serve

import (
	"net/http"

	"github.com/perfdoctor/perfdoctor/casebook/g1leak"
	"github.com/perfdoctor/perfdoctor/casebook/g2backlog"
)

func init() {
	Register(Case{Name: "g1", Class: "goroutine-leak", Title: "G1: a late quote is sent on an unbuffered channel its requester stopped reading",
		// Both variants start a goroutine per request to enforce the
		// quote's timeout; the fix buffers its channel, so the churn
		// (measured 11-23% of CPU with the scheduler's hand-offs) stays.
		FixedKeeps: map[string]string{"goroutine-churn": "both variants start a goroutine per request for the timeout; only the leak is fixed"},
		ProofFrom:  map[string]string{"go1.27": "leaked (goroutineleak profile)"},
		Build: func(variant string, _ Options) (http.Handler, func() error, error) {
			h, err := g1leak.NewHandler(variant)
			return h, nil, err
		}})
	// Class "": goroutines pile up behind the writer and drain. Neither
	// variant may be called a goroutine leak; the bad one's pile-up costs
	// GC time (its stacks are scanned), so it may show medium findings.
	Register(Case{Name: "g2", Class: "", Never: "goroutine-leak", Title: "G2: audit events queue behind a slow writer and drain (a backlog, not a leak)",
		Build: func(variant string, _ Options) (http.Handler, func() error, error) {
			h, err := g2backlog.NewHandler(variant)
			if err != nil {
				return nil, nil, err
			}
			return h, h.Close, nil
		}})
}
