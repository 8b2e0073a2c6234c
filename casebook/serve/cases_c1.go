package serve

import (
	"net/http"

	"github.com/perfdoctor/perfdoctor/casebook/c1zlib"
)

func init() {
	Register(Case{Name: "c1", Class: "compression-level", Title: "C1: zlib BestCompression on 1 MB batches",
		// LIB004 grades by the CPU share in the compressor and no longer
		// guesses stdlib levels 2-9 from findMatch's share; both variants
		// spend ~99% of CPU in the same deflate frames, so the fixed one is
		// graded high too.
		Pending: "compress/flate at level 9 and at level 6 run the same frames and both take ~99% of CPU here, so the profile cannot tell the fixed variant from the bad one; the case needs a fix visible in the profile (klauspost levels, pooled writers, cached bodies)",
		Build: func(variant string, _ Options) (http.Handler, func() error, error) {
			h, err := c1zlib.NewHandler(variant)
			return h, nil, err
		}})
}
