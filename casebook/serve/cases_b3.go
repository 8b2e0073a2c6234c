package serve

import (
	"net/http"

	"github.com/perfdoctor/perfdoctor/casebook/b3growth"
)

func init() {
	Register(Case{Name: "b3", Class: "memory-growth", Title: "B3: a session cache that is never trimmed",
		Build: func(variant string, _ Options) (http.Handler, func() error, error) {
			h, err := b3growth.Handler(variant)
			if err != nil {
				return nil, nil, err
			}
			return h, nil, nil
		}})
}
