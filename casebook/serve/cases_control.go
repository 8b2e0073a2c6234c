package serve

import (
	"net/http"

	"github.com/perfdoctor/perfdoctor/casebook/control"
)

func init() {
	// Class "": a healthy control, nothing above low on either variant.
	Register(Case{Name: "control", Class: "", Title: "Control: a healthy service with nothing to fix (both variants identical)",
		Build: func(variant string, _ Options) (http.Handler, func() error, error) {
			h, err := control.NewHandler(variant)
			if err != nil {
				return nil, nil, err
			}
			return h, nil, nil
		}})
}
