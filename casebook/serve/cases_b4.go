package serve

import (
	"net/http"

	"github.com/perfdoctor/perfdoctor/casebook/b4report"
)

func init() {
	Register(Case{Name: "b4", Class: "reflection-serialization", Title: "B4: JSON decoded into interface{} trees and re-encoded on every request",
		Build: func(variant string, _ Options) (http.Handler, func() error, error) {
			h, err := b4report.NewHandler(variant)
			if err != nil {
				return nil, nil, err
			}
			return h, nil, nil
		}})
}
