package report

import (
	"encoding/json"
	"io"
	"net/url"
	"path/filepath"
	"strings"

	"github.com/perfdoctor/perfdoctor/internal/human"
	"github.com/perfdoctor/perfdoctor/internal/ruledocs"
	"github.com/perfdoctor/perfdoctor/rules"
)

// SARIF 2.1.0 (OASIS), the format code-scanning services read. Only the
// parts perfdoctor fills are modelled.
const (
	sarifVersion = "2.1.0"
	sarifSchema  = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
	toolURI      = "https://github.com/perfdoctor/perfdoctor"
)

// SARIFOptions adjusts the SARIF log.
type SARIFOptions struct {
	// SourceRoot, when set, makes locations under it relative to it (with
	// uriBaseId SRCROOT), as code-scanning services want; others stay
	// absolute file URIs.
	SourceRoot string
	// Rules is the catalog described in tool.driver.rules; nil means the
	// report's Catalog.
	Rules []*rules.Rule
}

type sarifLog struct {
	Schema  string     `json:"$schema"`
	Version string     `json:"version"`
	Runs    []sarifRun `json:"runs"`
}

type sarifRun struct {
	Tool               sarifTool                      `json:"tool"`
	Invocations        []sarifInvocation              `json:"invocations,omitempty"`
	OriginalURIBaseIDs map[string]sarifArtifactLocURI `json:"originalUriBaseIds,omitempty"`
	Results            []sarifResult                  `json:"results"`
}

type sarifArtifactLocURI struct {
	URI string `json:"uri"`
}

type sarifTool struct {
	Driver sarifDriver `json:"driver"`
}

type sarifDriver struct {
	Name           string      `json:"name"`
	Version        string      `json:"version,omitempty"`
	InformationURI string      `json:"informationUri,omitempty"`
	Rules          []sarifRule `json:"rules"`
}

type sarifMessage struct {
	Text     string `json:"text"`
	Markdown string `json:"markdown,omitempty"`
}

type sarifRule struct {
	ID                   string         `json:"id"`
	Name                 string         `json:"name"`
	ShortDescription     sarifMessage   `json:"shortDescription"`
	FullDescription      *sarifMessage  `json:"fullDescription,omitempty"`
	Help                 *sarifMessage  `json:"help,omitempty"`
	HelpURI              string         `json:"helpUri,omitempty"`
	DefaultConfiguration *sarifConfig   `json:"defaultConfiguration,omitempty"`
	Properties           map[string]any `json:"properties,omitempty"`
}

type sarifConfig struct {
	Level string `json:"level"`
}

type sarifResult struct {
	RuleID              string            `json:"ruleId"`
	RuleIndex           int               `json:"ruleIndex"`
	Level               string            `json:"level"`
	Message             sarifMessage      `json:"message"`
	Locations           []sarifLocation   `json:"locations,omitempty"`
	PartialFingerprints map[string]string `json:"partialFingerprints,omitempty"`
	Properties          map[string]any    `json:"properties,omitempty"`
}

type sarifLocation struct {
	PhysicalLocation *sarifPhysical    `json:"physicalLocation,omitempty"`
	LogicalLocations []sarifLogicalLoc `json:"logicalLocations,omitempty"`
	Message          *sarifMessage     `json:"message,omitempty"`
	Properties       map[string]any    `json:"properties,omitempty"`
}

type sarifPhysical struct {
	ArtifactLocation sarifArtifactLocation `json:"artifactLocation"`
	Region           *sarifRegion          `json:"region,omitempty"`
}

type sarifArtifactLocation struct {
	URI       string `json:"uri"`
	URIBaseID string `json:"uriBaseId,omitempty"`
}

type sarifRegion struct {
	StartLine int64 `json:"startLine"`
}

type sarifLogicalLoc struct {
	FullyQualifiedName string `json:"fullyQualifiedName"`
	Kind               string `json:"kind"`
}

type sarifInvocation struct {
	ExecutionSuccessful bool                `json:"executionSuccessful"`
	Notifications       []sarifNotification `json:"toolConfigurationNotifications,omitempty"`
}

type sarifNotification struct {
	Descriptor sarifDescriptorRef `json:"descriptor"`
	Level      string             `json:"level"`
	Message    sarifMessage       `json:"message"`
}

type sarifDescriptorRef struct {
	ID string `json:"id"`
}

// WriteSARIF writes the findings as a SARIF 2.1.0 log: the rule catalog
// as tool.driver.rules, one result per finding with its code locations.
func WriteSARIF(w io.Writer, r *Report) error { return WriteSARIFWith(w, r, SARIFOptions{}) }

// WriteSARIFWith is WriteSARIF with options.
func WriteSARIFWith(w io.Writer, r *Report, opts SARIFOptions) error {
	cat := opts.Rules
	if cat == nil {
		cat = r.Catalog
	}
	name, version := "perfdoctor", ""
	if f := strings.Fields(r.Tool); len(f) == 2 {
		name, version = f[0], f[1]
	}
	run := sarifRun{
		Tool:    sarifTool{Driver: sarifDriver{Name: name, Version: version, InformationURI: toolURI, Rules: []sarifRule{}}},
		Results: []sarifResult{},
	}
	index := map[string]int{}
	for _, rule := range cat {
		index[rule.ID] = len(run.Tool.Driver.Rules)
		run.Tool.Driver.Rules = append(run.Tool.Driver.Rules, sarifRuleFor(rule))
	}
	root := ""
	if opts.SourceRoot != "" {
		if abs, err := filepath.Abs(opts.SourceRoot); err == nil {
			root = abs
			run.OriginalURIBaseIDs = map[string]sarifArtifactLocURI{"SRCROOT": {URI: fileURI(root) + "/"}}
		}
	}
	for _, f := range r.Findings {
		i, ok := index[f.Rule]
		if !ok { // a finding from a rule outside the catalog given
			i = len(run.Tool.Driver.Rules)
			index[f.Rule] = i
			run.Tool.Driver.Rules = append(run.Tool.Driver.Rules, sarifRule{ID: f.Rule, Name: f.Class,
				ShortDescription: sarifMessage{Text: f.Class}})
		}
		res := sarifResult{
			RuleID:    f.Rule,
			RuleIndex: i,
			Level:     sarifLevel(f.Severity),
			Message: sarifMessage{Text: mdText(f.Summary) + " Estimated gain: " + human.Percent(f.Impact) + " of " + f.Resource +
				". Fix: " + mdText(f.Fix)},
			Properties: map[string]any{
				"id":       f.ID,
				"class":    f.Class,
				"severity": f.Severity.String(),
				"impact":   f.Impact,
				"resource": f.Resource,
			},
		}
		if f.CausedBy != "" {
			res.Properties["causedBy"] = f.CausedBy
			res.Message.Text = "A symptom of " + f.CausedBy + " (" + f.CauseReason + "). " + res.Message.Text
		}
		if len(f.Explains) > 0 {
			res.Properties["explains"] = f.Explains
		}
		for _, l := range f.Locations {
			loc := sarifLocation{
				LogicalLocations: []sarifLogicalLoc{{FullyQualifiedName: l.Function, Kind: "function"}},
				Properties:       map[string]any{"share": l.Share},
			}
			if l.Role != "" {
				loc.Message = &sarifMessage{Text: l.Role + ", " + human.Percent(l.Share) + " of the profile"}
			}
			if l.File != "" {
				loc.PhysicalLocation = &sarifPhysical{ArtifactLocation: artifactFor(l.File, root)}
				if l.Line > 0 {
					loc.PhysicalLocation.Region = &sarifRegion{StartLine: l.Line}
				}
			}
			res.Locations = append(res.Locations, loc)
		}
		fp := f.Rule
		if len(f.Locations) > 0 {
			fp += ":" + f.Locations[0].Function
		}
		res.PartialFingerprints = map[string]string{"perfdoctorFinding/v1": fp}
		run.Results = append(run.Results, res)
	}
	inv := sarifInvocation{ExecutionSuccessful: true}
	for _, nc := range r.NotChecked {
		inv.Notifications = append(inv.Notifications, sarifNotification{
			Descriptor: sarifDescriptorRef{ID: nc.Rule},
			Level:      "note",
			Message:    sarifMessage{Text: "not checked: " + nc.Reason},
		})
	}
	run.Invocations = []sarifInvocation{inv}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(sarifLog{Schema: sarifSchema, Version: sarifVersion, Runs: []sarifRun{run}})
}

func sarifRuleFor(r *rules.Rule) sarifRule {
	d := r.Doc
	help := mdText(d.Text)
	if d.Fix != "" {
		help += "\n\nFix: " + mdText(d.Fix)
	}
	if d.Caveats != "" {
		help += "\n\nCaveats: " + mdText(d.Caveats)
	}
	sr := sarifRule{
		ID:                   r.ID,
		Name:                 r.Class,
		ShortDescription:     sarifMessage{Text: d.Title},
		Help:                 &sarifMessage{Text: help, Markdown: ruledocs.Page(r)},
		DefaultConfiguration: &sarifConfig{Level: "warning"},
		Properties:           map[string]any{"tags": []string{"performance", r.Class}},
	}
	if d.Text != "" {
		sr.FullDescription = &sarifMessage{Text: mdText(d.Text)}
	}
	if len(d.Refs) > 0 {
		sr.HelpURI = d.Refs[0]
	}
	return sr
}

// sarifLevel maps severities onto SARIF's levels.
func sarifLevel(s rules.Severity) string {
	switch {
	case s >= rules.High:
		return "error"
	case s == rules.Medium:
		return "warning"
	case s == rules.Low:
		return "note"
	}
	return "none"
}

func artifactFor(file, root string) sarifArtifactLocation {
	if root != "" {
		if rel, err := filepath.Rel(root, file); err == nil && filepath.IsAbs(file) && !strings.HasPrefix(rel, "..") {
			return sarifArtifactLocation{URI: (&url.URL{Path: filepath.ToSlash(rel)}).String(), URIBaseID: "SRCROOT"}
		}
	}
	if filepath.IsAbs(file) || strings.HasPrefix(file, "/") {
		return sarifArtifactLocation{URI: fileURI(file)}
	}
	return sarifArtifactLocation{URI: (&url.URL{Path: filepath.ToSlash(file)}).String()}
}

func fileURI(path string) string {
	return (&url.URL{Scheme: "file", Path: filepath.ToSlash(path)}).String()
}
