package report

import (
	"encoding/json"
	"io"
)

// WriteJSON writes the report as indented JSON (docs/schema.md).
func WriteJSON(w io.Writer, r *Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}
