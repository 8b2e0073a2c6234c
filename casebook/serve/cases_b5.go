package serve

import (
	"net/http"

	"github.com/perfdoctor/perfdoctor/casebook/b5heap"
)

func init() {
	Register(Case{Name: "b5", Class: "gc-scan-heavy-heap", Title: "B5: a live heap of millions of small pointer-rich objects",
		Build: func(variant string, _ Options) (http.Handler, func() error, error) {
			h, err := b5heap.NewHandler(variant)
			if err != nil {
				return nil, nil, err
			}
			return h, nil, nil
		}})
}
