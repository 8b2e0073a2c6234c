package serve

import (
	"net/http"

	"github.com/perfdoctor/perfdoctor/casebook/l3diskread"
)

func init() {
	Register(Case{Name: "l3", Class: "disk-io-wait", Title: "L3: four direct-I/O reads from the disk per request",
		Build: func(variant string, _ Options) (http.Handler, func() error, error) {
			h, err := l3diskread.NewHandler(variant)
			if err != nil {
				return nil, nil, err
			}
			return h, h.Close, nil
		}})
}
