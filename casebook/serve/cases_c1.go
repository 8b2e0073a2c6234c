package serve

import (
	"net/http"

	"github.com/perfdoctor/perfdoctor/casebook/c1zlib"
)

func init() {
	Register(Case{Name: "c1", Class: "compression-level", Title: "C1: zlib BestCompression on 1 MB batches",
		Build: func(variant string, _ Options) (http.Handler, func() error, error) {
			h, err := c1zlib.NewHandler(variant)
			return h, nil, err
		}})
}
