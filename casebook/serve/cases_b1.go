package serve

import (
	"net/http"

	"github.com/perfdoctor/perfdoctor/casebook/b1churn"
)

func init() {
	Register(Case{Name: "b1", Class: "goroutine-churn", Title: "B1: ~10 goroutines per request write rate-limit counters",
		Build: func(variant string, _ Options) (http.Handler, func() error, error) {
			h, err := b1churn.NewHandler(variant)
			if err != nil {
				return nil, nil, err
			}
			return h, h.Close, nil
		}})
}
