package serve

import (
	"net/http"

	"github.com/perfdoctor/perfdoctor/casebook/e2ports"
)

func init() {
	Register(Case{Name: "e2", Class: "ephemeral-port-exhaustion", Title: "E2/A6: a new TCP connection to the backend per request, TIME_WAIT piling up",
		Build: func(variant string, _ Options) (http.Handler, func() error, error) {
			h, err := e2ports.NewHandler(variant)
			if err != nil {
				return nil, nil, err
			}
			return h, h.Close, nil
		}})
}
