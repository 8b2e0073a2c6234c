package serve

import (
	"net/http"

	"github.com/perfdoctor/perfdoctor/casebook/d1gc"
	"github.com/perfdoctor/perfdoctor/casebook/d2udp"
)

func init() {
	Register(Case{Name: "d1", Class: "gc-pressure", Title: "D1: allocation rate drives the GC over a small heap",
		Build: func(variant string, _ Options) (http.Handler, func() error, error) {
			h, err := d1gc.Handler(variant)
			if err != nil {
				return nil, nil, err
			}
			return h, nil, d1gc.Tune(variant)
		}})
	Register(Case{Name: "d2", Class: "connection-churn", Title: "D2: a UDP socket dialled and closed per datagram",
		Build: func(variant string, o Options) (http.Handler, func() error, error) {
			h, err := d2udp.NewHandler(variant, o.Downstream())
			if err != nil {
				return nil, nil, err
			}
			return h, h.Close, nil
		}})
}
