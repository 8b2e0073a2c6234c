package serve

import (
	"net/http"

	"github.com/perfdoctor/perfdoctor/casebook/l4snapshot"
)

func init() {
	Register(Case{Name: "l4", Class: "gc-pause-tail", Title: "L4: a 512 MiB snapshot taken with one non-preemptible copy holds every GC stop-the-world",
		Build: func(variant string, _ Options) (http.Handler, func() error, error) {
			h, err := l4snapshot.NewHandler(variant)
			if err != nil {
				return nil, nil, err
			}
			return h, h.Close, nil
		}})
}
