package serve

import (
	"net/http"

	"github.com/perfdoctor/perfdoctor/casebook/b1churn"
)

func init() {
	Register(Case{Name: "b1", Class: "goroutine-churn", Title: "B1: ~10 goroutines per request write rate-limit counters",
		Pending: "SCHED002's score sits at the high threshold (0.20-0.21) on the bad variant and reaches medium on the fixed one: it undercounts the goroutines' own work",
		Build: func(variant string, _ Options) (http.Handler, func() error, error) {
			h, err := b1churn.NewHandler(variant)
			if err != nil {
				return nil, nil, err
			}
			return h, h.Close, nil
		}})
}
