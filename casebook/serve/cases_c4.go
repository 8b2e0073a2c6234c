package serve

import (
	"net/http"

	"github.com/perfdoctor/perfdoctor/casebook/c4strfmt"
)

func init() {
	Register(Case{Name: "c4", Class: "string-formatting", Title: "C4: keys and lines built with fmt.Sprintf and += per event",
		Build: func(variant string, _ Options) (http.Handler, func() error, error) {
			h, err := c4strfmt.NewHandler(variant)
			return h, nil, err
		}})
}
