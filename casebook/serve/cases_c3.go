package serve

import (
	"net/http"

	"github.com/perfdoctor/perfdoctor/casebook/c3thrift"
)

func init() {
	Register(Case{Name: "c3", Class: "syscall-per-write", Title: "C3: Thrift over a bare TSocket, one write syscall per field",
		Build: func(variant string, o Options) (http.Handler, func() error, error) {
			h, err := c3thrift.NewHandler(variant, o.Downstream())
			if err != nil {
				return nil, nil, err
			}
			return h, h.Close, nil
		}})
}
