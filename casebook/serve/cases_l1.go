package serve

import (
	"net/http"

	"github.com/perfdoctor/perfdoctor/casebook/l1fsync"
)

func init() {
	Register(Case{Name: "l1", Class: "sync-disk-write", Title: "L1: a write-ahead log fdatasyncs every request on the request path",
		// The sync's kernel time is the block layer's and the filesystem's,
		// never network (issue 21: redis's fdatasync once read as such).
		Never: "kernel-network-overhead",
		Build: func(variant string, _ Options) (http.Handler, func() error, error) {
			h, err := l1fsync.NewHandler(variant)
			if err != nil {
				return nil, nil, err
			}
			return h, h.Close, nil
		}})
}
