package serve

import (
	"net/http"

	"github.com/perfdoctor/perfdoctor/casebook/b2oversize"
)

func init() {
	Register(Case{Name: "b2", Class: "oversized-allocation", Title: "B2: a per-request report slice sized for the platform's maximum",
		Build: func(variant string, _ Options) (http.Handler, func() error, error) {
			h, err := b2oversize.NewHandler(variant)
			if err != nil {
				return nil, nil, err
			}
			return h, nil, nil
		}})
}
