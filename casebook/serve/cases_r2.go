package serve

import (
	"net/http"

	"github.com/perfdoctor/perfdoctor/casebook/r2relay"
)

func init() {
	Register(Case{Name: "r2", Class: "connection-churn", Below: map[string]string{"kernel-network-overhead": "connection-churn"},
		Title: "R2: a UDP relay that dials and closes its upstream socket per datagram (kernel time is the symptom)",
		Build: func(variant string, o Options) (http.Handler, func() error, error) {
			r, err := r2relay.New(variant, o.Downstream())
			if err != nil {
				return nil, nil, err
			}
			return r, r.Close, nil
		}})
}
