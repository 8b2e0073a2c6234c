package serve

import (
	"net/http"

	"github.com/perfdoctor/perfdoctor/casebook/b5heap"
)

func init() {
	Register(Case{Name: "b5", Class: "gc-scan-heavy-heap", Title: "B5: a live heap of millions of small pointer-rich objects",
		Pending: "GC001 (gc-pressure) outranks GC002 (gc-scan-heavy-heap) on the same GC cost: the two rules need a split by GC cycle rate, or a way for the specific finding to rank first",
		Build: func(variant string, _ Options) (http.Handler, func() error, error) {
			h, err := b5heap.NewHandler(variant)
			if err != nil {
				return nil, nil, err
			}
			return h, nil, nil
		}})
}
