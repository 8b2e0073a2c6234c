// Package fleetreport renders a fleet report (fleet.Report) as text for
// terminals, JSON for machines (docs/fleet.md), Markdown for tickets and
// pull requests, and an HTML page whose table links to each service's own
// report. It decides nothing: the ranking comes from package fleet.
package fleetreport

import (
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/perfdoctor/perfdoctor/fleet"
	"github.com/perfdoctor/perfdoctor/internal/human"
	"github.com/perfdoctor/perfdoctor/internal/output"
)

// Formats maps each output format to its writer.
var Formats = map[string]func(io.Writer, *fleet.Report) error{
	"text":     WriteText,
	"json":     WriteJSON,
	"markdown": WriteMarkdown,
	"html":     WriteHTML,
}

// FormatNames lists the formats for help texts and errors.
func FormatNames() string {
	names := make([]string, 0, len(Formats))
	for n := range Formats {
		names = append(names, n)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// Write renders r in the named format.
func Write(w io.Writer, format string, r *fleet.Report) error {
	f, ok := Formats[format]
	if !ok {
		return fmt.Errorf("unknown format %q (want one of: %s)", format, FormatNames())
	}
	return f(w, r)
}

// WriteJSON writes the document docs/fleet.md describes.
// WriteFiles writes the fleet report next to the bundles: fleet.json and
// fleet.html in the run's directory, each whole or not at all.
func WriteFiles(r *fleet.Report) error {
	for _, f := range []struct{ name, format string }{{"fleet.json", "json"}, {"fleet.html", "html"}} {
		if err := output.Write(filepath.Join(r.Dir, f.name), nil, output.Shared, func(w io.Writer) error { return Write(w, f.format, r) }); err != nil {
			return err
		}
	}
	return nil
}

func WriteJSON(w io.Writer, r *fleet.Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// Cores formats a saving: "3.1 of 11.8 cores", or the impact alone for a
// finding that saves something other than CPU.
func Cores(s fleet.Saving) string {
	if s.Cores == nil {
		return fmt.Sprintf("%s of %s", human.Percent(s.Impact), s.Resource)
	}
	return fmt.Sprintf("~%s of %s cores", cores(*s.Cores), cores(s.ServiceCores))
}

func cores(v float64) string {
	if v < 1 {
		return fmt.Sprintf("%.2f", v)
	}
	return fmt.Sprintf("%.1f", v)
}

// fromProfile reports whether some instance's cores were measured from
// its profile, which the views then explain.
func fromProfile(r *fleet.Report) bool {
	for _, s := range r.Services {
		for _, in := range s.Instances {
			if in.CPUSource == fleet.CPUFromProfile {
				return true
			}
		}
	}
	return false
}

// profileNote explains the cores marked as measured from profiles.
func profileNote(r *fleet.Report) string {
	if r.Store != "" {
		return "Cores marked * are the instance's CPU time in the store, divided by the range"
	}
	return "Cores marked * were measured from the instance's CPU profile: Prometheus had no " + fleet.CPUMetric + " for it"
}

// status is the collection state of a service, "3 of 12 collected".
func status(s *fleet.ServiceDiag) string {
	picked, failed := 0, 0
	for _, in := range s.Instances {
		if in.Picked != "" {
			picked++
			if in.Status == fleet.StatusFailed || in.Status == fleet.StatusSkipped {
				failed++
			}
		}
	}
	out := fmt.Sprintf("%d instances, %d collected", len(s.Instances), s.Collected)
	if failed > 0 {
		out += fmt.Sprintf(", %d failed", failed)
	}
	return out
}

func instanceCores(in fleet.InstanceReport) string {
	if in.Cores == nil {
		return "?"
	}
	s := fmt.Sprintf("%.2f", *in.Cores)
	if in.CPUSource == fleet.CPUFromProfile {
		s += "*"
	}
	return s
}

// WriteText is the terminal view: the savings, then each service.
func WriteText(w io.Writer, r *fleet.Report) error {
	var b strings.Builder
	fmt.Fprintf(&b, "perfdoctor fleet: %d services from %s, grouped by %s", len(r.Services), r.Source(), r.GroupBy)
	if r.Match != "" {
		fmt.Fprintf(&b, ", matching %s", r.Match)
	}
	fmt.Fprintf(&b, " (%s)\n", r.End.Sub(r.Start).Round(100*time.Millisecond))
	if r.Partial {
		b.WriteString("partial: some picked instances could not be collected (see below)\n")
	}
	b.WriteString("\nSavings, by cores to recover:\n")
	if len(r.Savings) == 0 {
		b.WriteString("  nothing to fix found\n")
	}
	for _, s := range r.Savings {
		fmt.Fprintf(&b, "%3d. %s in %s: %s  [%s %s]\n      %s\n", s.Rank, s.Class, s.Service, Cores(s), s.Severity, s.Rule, s.Summary)
	}
	for _, s := range r.Services {
		fmt.Fprintf(&b, "\n%s: %s cores (%s), %s\n", s.Name, cores(s.Cores), s.CPUSource, status(s))
		if s.Error != "" {
			fmt.Fprintf(&b, "  error: %s\n", s.Error)
		}
		if s.ReportHTML != "" {
			fmt.Fprintf(&b, "  report: %s\n", joinDir(r.Dir, s.ReportHTML))
		}
		for i, f := range s.Findings {
			if i == 3 {
				fmt.Fprintf(&b, "  ... %d more in the report\n", len(s.Findings)-3)
				break
			}
			fmt.Fprintf(&b, "  %s %s %s: %s\n", f.Severity, f.Class, human.Percent(f.Impact), f.Summary)
		}
		for _, in := range s.Instances {
			line := fmt.Sprintf("    %-24s %6s cores  %-8s %-10s", in.Instance, instanceCores(in), in.Picked, in.Status)
			if in.Top != nil {
				line += fmt.Sprintf(" top: %s %s", in.Top.Class, human.Percent(in.Top.Impact))
			}
			if in.Error != "" {
				line += "  (" + in.Error + ")"
			}
			b.WriteString(strings.TrimRight(line, " ") + "\n")
			if in.Outlier != "" {
				fmt.Fprintf(&b, "      outlier: %s\n", in.Outlier)
			}
		}
	}
	if fromProfile(r) {
		if r.Store != "" {
			b.WriteString("\n* cores: the instance's CPU time in the store, divided by the range\n")
		} else {
			b.WriteString("\n* cores measured from the instance's CPU profile: Prometheus had no " + fleet.CPUMetric + " for it\n")
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func joinDir(dir, rel string) string {
	if dir == "" {
		return rel
	}
	return strings.TrimRight(dir, "/") + "/" + rel
}

// WriteMarkdown is the savings table and the instances, for a ticket.
func WriteMarkdown(w io.Writer, r *fleet.Report) error {
	var b strings.Builder
	fmt.Fprintf(&b, "## perfdoctor fleet: %d services\n\n", len(r.Services))
	fmt.Fprintf(&b, "From %s, grouped by `%s`", md(r.Source()), md(r.GroupBy))
	if r.Match != "" {
		fmt.Fprintf(&b, ", matching `%s`", md(r.Match))
	}
	b.WriteString(".")
	if r.Partial {
		b.WriteString(" **Partial**: some picked instances could not be collected.")
	}
	b.WriteString("\n\n| # | finding | service | cores to recover | severity | summary |\n|---|---|---|---|---|---|\n")
	for _, s := range r.Savings {
		svc := md(s.Service)
		if s.Report != "" {
			svc = fmt.Sprintf("[%s](%s)", svc, s.Report)
		}
		fmt.Fprintf(&b, "| %d | %s (%s) | %s | %s | %s | %s |\n", s.Rank, md(s.Class), s.Rule, svc, Cores(s), s.Severity, md(s.Summary))
	}
	for _, s := range r.Services {
		fmt.Fprintf(&b, "\n### %s\n\n%s cores (%s), %s.", md(s.Name), cores(s.Cores), s.CPUSource, status(s))
		if s.Error != "" {
			fmt.Fprintf(&b, " Error: %s.", md(s.Error))
		}
		b.WriteString("\n\n| instance | cores | picked | status | top finding | outlier |\n|---|---|---|---|---|---|\n")
		for _, in := range s.Instances {
			top := ""
			if in.Top != nil {
				top = fmt.Sprintf("%s %s", in.Top.Class, human.Percent(in.Top.Impact))
			}
			st := in.Status
			if in.Error != "" {
				st += ": " + in.Error
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", md(in.Instance), instanceCores(in), in.Picked, md(st), top, md(in.Outlier))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// md escapes what would break a Markdown table cell.
func md(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ", "`", "'", "<", "&lt;").Replace(s)
}

var page = template.Must(template.New("fleet").Funcs(template.FuncMap{
	"cores":       Cores,
	"fmtCores":    cores,
	"percent":     human.Percent,
	"icores":      instanceCores,
	"status":      status,
	"fromProfile": fromProfile,
	"profileNote": profileNote,
}).Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>perfdoctor fleet: {{len .Services}} services</title>
<style>
body{font:14px/1.45 system-ui,sans-serif;margin:2em auto;max-width:72em;padding:0 1em;color:#222}
table{border-collapse:collapse;width:100%;margin:.5em 0 1.5em}
th,td{border-bottom:1px solid #ddd;padding:.35em .6em;text-align:left;vertical-align:top}
th{background:#f4f4f4}td.num{text-align:right;font-variant-numeric:tabular-nums}
.high{color:#b00020;font-weight:600}.medium{color:#b35c00}.low{color:#555}.info{color:#888}
.outlier{background:#fff6e0}.partial{background:#fff0f0;padding:.5em;border-left:4px solid #b00020}
small{color:#666}
</style></head><body>
<h1>perfdoctor fleet</h1>
<p>{{len .Services}} services from <code>{{.Source}}</code>, grouped by <code>{{.GroupBy}}</code>{{if .Match}}, matching <code>{{.Match}}</code>{{end}}. <small>{{.Tool}}, {{.Start.UTC.Format "2006-01-02 15:04:05Z"}}</small></p>
{{if .Partial}}<p class="partial">Partial: some picked instances could not be collected; they are listed with their error below.</p>{{end}}
<h2>Savings, by cores to recover</h2>
<table id="savings"><thead><tr><th>#</th><th>finding</th><th>service</th><th>cores to recover</th><th>severity</th><th>summary</th></tr></thead><tbody>
{{range .Savings}}<tr><td class="num">{{.Rank}}</td><td>{{.Class}} <small>{{.Rule}}</small></td><td>{{if .Report}}<a href="{{.Report}}">{{.Service}}</a>{{else}}{{.Service}}{{end}}</td><td class="num">{{cores .}}</td><td class="{{.Severity}}">{{.Severity}}</td><td>{{.Summary}}</td></tr>
{{else}}<tr><td colspan="6">Nothing to fix found.</td></tr>{{end}}</tbody></table>
{{range .Services}}<h2 id="svc-{{.Name}}">{{.Name}}</h2>
<p>{{fmtCores .Cores}} cores ({{.CPUSource}}), {{status .}}.{{if .ReportHTML}} <a href="{{.ReportHTML}}">Full report</a>{{end}}{{if .MergedCPU}}, <a href="{{.MergedCPU}}">merged CPU profile</a>{{end}}{{if .Representative}} <small>per-process evidence from {{.Representative}}</small>{{end}}</p>
{{if .Error}}<p class="partial">{{.Error}}</p>{{end}}
<table><thead><tr><th>instance</th><th>cores</th><th>picked</th><th>status</th><th>top finding</th><th>outlier</th></tr></thead><tbody>
{{range .Instances}}<tr{{if .Outlier}} class="outlier"{{end}}><td>{{.Instance}}{{if .Bundle}} <small><a href="{{.Bundle}}/">bundle</a></small>{{end}}</td><td class="num">{{icores .}}</td><td>{{.Picked}}</td><td>{{.Status}}{{if .Error}} <small>{{.Error}}</small>{{end}}</td><td>{{with .Top}}{{.Class}} {{percent .Impact}}{{end}}</td><td>{{.Outlier}}</td></tr>
{{end}}</tbody></table>
{{end}}
{{if fromProfile .}}<p><small>{{profileNote .}}.</small></p>{{end}}
</body></html>
`))

// WriteHTML writes one page; its links are relative to the report's Dir,
// so write it there (perfdoctor fleet does) for them to work.
func WriteHTML(w io.Writer, r *fleet.Report) error {
	return page.Execute(w, r)
}
