package serve

import (
	"net/http"

	"github.com/perfdoctor/perfdoctor/casebook/a1producer"
)

func init() {
	Register(Case{Name: "a1", Class: "unbatched-producer", Title: "A1: a sarama Kafka producer sends three log streams message by message",
		Build: func(variant string, _ Options) (http.Handler, func() error, error) {
			h, err := a1producer.NewHandler(variant)
			if err != nil {
				return nil, nil, err
			}
			return h, h.Close, nil
		}})
}
