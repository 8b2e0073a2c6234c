package report

import (
	"encoding/json"
	"fmt"
	"os"
)

// ReadJSON reads a report written by diagnose --format json: its findings
// (with their configuration fixes) and inputs. The evidence is not in the
// JSON, so the result has none.
func ReadJSON(path string) (*Report, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var rep Report
	if err := json.Unmarshal(b, &rep); err != nil {
		return nil, fmt.Errorf("%s: not a perfdoctor JSON report: %w", path, err)
	}
	if rep.SchemaVersion == 0 || rep.Findings == nil {
		return nil, fmt.Errorf("%s: not a perfdoctor JSON report (no schema_version or findings)", path)
	}
	return &rep, nil
}
