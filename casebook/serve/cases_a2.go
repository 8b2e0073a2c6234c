package serve

import (
	"net/http"

	"github.com/perfdoctor/perfdoctor/casebook/a2summary"
)

func init() {
	Register(Case{Name: "a2", Class: "metrics-summary-cost", Title: "A2: ten per-stage Prometheus Summaries observed on every request",
		Build: func(variant string, _ Options) (http.Handler, func() error, error) {
			h, err := a2summary.NewHandler(variant)
			return h, nil, err
		}})
}
