package serve

import (
	"net/http"

	"github.com/perfdoctor/perfdoctor/casebook/r3gzip"
)

func init() {
	Register(Case{Name: "r3", Class: "compression-level",
		// Run-queue waits while compression saturates the CPUs, and GC
		// driven by a new compressor per response, are symptoms of it.
		Below: map[string]string{"scheduling-latency": "compression-level", "gc-pressure": "compression-level"},
		Title: "R3: gzip at BestCompression per response, a fresh writer each time, saturating the CPUs",
		Build: func(variant string, _ Options) (http.Handler, func() error, error) {
			h, err := r3gzip.NewHandler(variant)
			if err != nil {
				return nil, nil, err
			}
			return h, h.Close, nil
		}})
}
