package serve

import (
	"net/http"

	"github.com/perfdoctor/perfdoctor/casebook/l2downstream"
)

func init() {
	Register(Case{Name: "l2", Class: "downstream-wait", Title: "L2: three calls to a backend with a slow tail, made one after the other",
		Build: func(variant string, _ Options) (http.Handler, func() error, error) {
			h, err := l2downstream.NewHandler(variant)
			if err != nil {
				return nil, nil, err
			}
			return h, h.Close, nil
		}})
}
