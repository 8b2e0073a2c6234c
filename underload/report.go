package underload

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/perfdoctor/perfdoctor/diagnose"
	"github.com/perfdoctor/perfdoctor/report"
)

// Diagnose is `perfdoctor run` and the demo: it profiles under load into
// dir/bundle, diagnoses the bundle (req names the producer and catalog;
// its paths are the bundle's), writes the report in format to out and
// as diagnose.ReportFiles in dir. Messages go to o.Messages.
func Diagnose(ctx context.Context, o Options, req diagnose.Request, dir, format string, out io.Writer) (*Result, error) {
	o.BundleDir = filepath.Join(dir, "bundle")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("output: %w", err)
	}
	res, err := Run(ctx, o)
	if res != nil && res.Manifest != nil {
		fmt.Fprint(o.Messages, res.Manifest.Summary(o.BundleDir))
	}
	if err != nil {
		return res, err
	}
	fmt.Fprintf(o.Messages, "perfdoctor: load: %s\n", res.Load)
	for _, w := range res.Load.Warnings {
		fmt.Fprintf(o.Messages, "perfdoctor: warning: %s\n", w)
	}
	req.Paths = []string{o.BundleDir}
	rep, err := diagnose.Run(ctx, req)
	if err != nil {
		return res, err
	}
	if err := report.Write(out, format, rep); err != nil {
		return res, err
	}
	if err := diagnose.SaveReports(dir, rep); err != nil {
		return res, err
	}
	fmt.Fprintf(o.Messages, "\nperfdoctor: bundle in %s, reports in %s\n", o.BundleDir, filepath.Join(dir, "report.{txt,json,html}"))
	return res, nil
}
