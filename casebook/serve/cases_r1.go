package serve

import (
	"net/http"

	"github.com/perfdoctor/perfdoctor/casebook/r1signup"
)

func init() {
	Register(Case{Name: "r1", Class: "regexp-compile-hot", AlsoTop3: []string{"string-formatting"},
		// The GC cost is driven by the compiler's allocations: a symptom.
		Below: map[string]string{"gc-pressure": "regexp-compile-hot"},
		Title: "R1: two problems in one service: regexps compiled per request (bigger) and fmt-built answers",
		Build: func(variant string, _ Options) (http.Handler, func() error, error) {
			h, err := r1signup.NewHandler(variant)
			if err != nil {
				return nil, nil, err
			}
			return h, nil, nil
		}})
}
