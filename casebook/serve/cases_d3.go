package serve

import (
	"net/http"

	"github.com/perfdoctor/perfdoctor/casebook/d3logging"
)

func init() {
	Register(Case{Name: "d3", Class: "logging-cost", Title: "D3: slog at Debug, five records per request",
		Build: func(variant string, _ Options) (http.Handler, func() error, error) {
			h, err := d3logging.NewHandler(variant)
			return h, nil, err
		}})
}
