package fleet

import (
	"context"
	"path/filepath"
	"time"

	"github.com/perfdoctor/perfdoctor/history"
)

// Record records each diagnosed service of the run as one run in the
// history store, with the cores it used, and returns how many it recorded.
func (r *Report) Record(ctx context.Context, store *history.Store) (int, error) {
	dir, err := filepath.Abs(r.Dir)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, s := range r.Services {
		if s.ReportJSON == "" {
			continue // nothing diagnosed
		}
		cores := s.Cores
		_, err := store.Record(ctx, history.Run{
			Kind: history.KindService, Target: s.Name, At: r.Start, Tool: r.Tool,
			Bundle: filepath.Join(dir, filepath.Dir(s.ReportJSON)), Cores: &cores,
			Fleet: r.Start.UTC().Format(time.RFC3339), Findings: history.FindingsOf(s.Findings, s.Cores),
		})
		if err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}
