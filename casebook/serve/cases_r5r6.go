package serve

import (
	"net/http"

	"github.com/perfdoctor/perfdoctor/casebook/r5busy"
	"github.com/perfdoctor/perfdoctor/casebook/r6tinyheap"
)

func init() {
	// Class "": healthy controls, nothing above low on either variant.
	Register(Case{Name: "r5", Class: "", Concurrency: 64,
		Title: "R5: control: a healthy CPU-bound search saturated by 64 connections, the load generator on the same cores",
		Build: func(variant string, _ Options) (http.Handler, func() error, error) {
			h, err := r5busy.NewHandler(variant)
			if err != nil {
				return nil, nil, err
			}
			return h, nil, nil
		}})
	Register(Case{Name: "r6", Class: "",
		Title: "R6: control: a tiny heap collected 100-200 times a second, cheaply",
		Build: func(variant string, _ Options) (http.Handler, func() error, error) {
			h, err := r6tinyheap.NewHandler(variant)
			if err != nil {
				return nil, nil, err
			}
			return h, nil, nil
		}})
}
