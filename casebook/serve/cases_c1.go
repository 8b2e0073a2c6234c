package serve

import (
	"net/http"

	"github.com/perfdoctor/perfdoctor/casebook/c1zlib"
)

func init() {
	Register(Case{Name: "c1", Class: "compression-level", Title: "C1: zlib BestCompression on 1 MB batches",
		// Compressing is this service's whole job: level 6 halves the CPU
		// per batch (verify: the throughput ratio in casebook/README.md),
		// and deflate is still ~99% of what remains, so LIB004, which
		// grades by the compressor's share and cannot read the level from
		// the frames, rightly still prescribes a lower level or a faster
		// library on the fixed variant.
		FixedKeeps: map[string]string{"compression-level": "deflate stays ~99% of the CPU at level 6; the gain is per batch, which verify measures"},
		Build: func(variant string, _ Options) (http.Handler, func() error, error) {
			h, err := c1zlib.NewHandler(variant)
			return h, nil, err
		}})
}
