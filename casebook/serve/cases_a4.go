package serve

import (
	"net/http"

	"github.com/perfdoctor/perfdoctor/casebook/a4config"
)

func init() {
	Register(Case{Name: "a4", Class: "reflection-serialization", Title: "A4: json.Marshal of a rarely changing config on every request",
		Build: func(variant string, _ Options) (http.Handler, func() error, error) {
			h, err := a4config.NewHandler(variant)
			if err != nil {
				return nil, nil, err
			}
			return h, h.Close, nil
		}})
}
