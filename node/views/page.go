package views

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/histor-observer/histor/crawl/state"
	"github.com/histor-observer/histor/log/canon"
	"github.com/histor-observer/histor/node/catalog"
	"github.com/histor-observer/histor/node/pkgruns"
)

// ServerPage is /api/v1/servers/<id> in HISTOR's member order; tools is
// spliced in after it as the stored bytes (a tool set can be megabytes).
type ServerPage struct {
	Server         Summary             `json:"server"`
	Description    *string             `json:"description"` // the registry's, clipped
	Descriptor     json.RawMessage     `json:"descriptor"`
	PatternMatches []catalog.Match     `json:"patternMatches"`
	Classifier     *struct{}           `json:"classifier"` // no classifier: always null
	Labels         []LabelRow          `json:"labels"`
	Timeline       []TimelineRow       `json:"timeline"`
	Changes        []ChangeRow         `json:"changes"`
	ClientReports  []catalog.ReportRow `json:"clientReports"`
	// Observers and Agreement are the peer view of the server, as /check
	// carries them; left out when the node keeps no view.
	Observers []any          `json:"observers,omitempty"`
	Agreement map[string]any `json:"agreement,omitempty"`
	// Package is a package server's sandbox runs (node/pkgruns); left
	// out for an endpoint.
	Package *pkgruns.Member `json:"package,omitempty"`
}

// LabelRow is one label of a server's page.
type LabelRow struct {
	ID          string `json:"id"`
	Method      string `json:"method"`
	Verdict     string `json:"verdict"`
	Subject     string `json:"subject"`
	ObservedAt  string `json:"observed_at"`
	IssuedAt    string `json:"issued_at"`
	Digest      string `json:"digest"`
	LeafIndex   uint64 `json:"leaf_index"`
	MethodShort string `json:"methodShort"`
}

// TimelineRow is one span of a server's timeline: consecutive crawls that
// saw the same thing.
type TimelineRow struct {
	From          string  `json:"from"`
	Until         string  `json:"until"`
	Count         int     `json:"count"`
	Status        string  `json:"status"`
	Detail        *string `json:"detail"`
	ToolSetDigest *string `json:"toolSetDigest"`
	SubjectDigest *string `json:"subjectDigest"`
	ToolCount     *int    `json:"toolCount"`
	ServerName    *string `json:"serverName"`
	ServerVersion *string `json:"serverVersion"`
}

// Packages is the sandbox's runs as a server's page reads them.
// *pkgruns.View is one.
type Packages interface {
	// Member is s's package member; nil for an endpoint.
	Member(s *catalog.Server) (*pkgruns.Member, error)
}

// Sources are what a server's page reads besides the catalog; a nil one
// leaves its members out.
type Sources struct {
	Peers    Peers
	Packages Packages
}

// ServerRecord is the /api/v1/servers/<id> answer for s.
func ServerRecord(c *catalog.Catalog, s *catalog.Server, now time.Time, src Sources) ([]byte, error) {
	page, tools, err := BuildServerPage(c, s, now, src)
	if err != nil {
		return nil, err
	}
	body, err := canon.MarshalPlain(page)
	if err != nil {
		return nil, fmt.Errorf("encoding server: %w", err)
	}
	if tools == nil {
		tools = []byte("null")
	}
	b := make([]byte, 0, len(body)+len(tools)+16)
	b = append(b, body[:len(body)-1]...)
	b = append(b, `,"tools":`...)
	b = append(b, tools...)
	b = append(b, '}')
	return b, nil
}

// BuildServerPage gathers s's page as of now and its stored tool set.
func BuildServerPage(c *catalog.Catalog, s *catalog.Server, now time.Time, src Sources) (*ServerPage, []byte, error) {
	p := &ServerPage{Server: Summarize(s, now), Description: NullString(s.Description)}
	var err error
	if p.Descriptor, err = c.Descriptor(s); err != nil {
		return nil, nil, err
	}
	if p.PatternMatches, err = c.PatternMatches(s); err != nil {
		return nil, nil, err
	}
	if err = fillHistory(c, s, p); err != nil {
		return nil, nil, err
	}
	if src.Peers != nil {
		if p.Observers, p.Agreement, err = src.Peers.Members(s.ID); err != nil {
			return nil, nil, err
		}
	}
	if src.Packages != nil {
		if p.Package, err = src.Packages.Member(s); err != nil {
			return nil, nil, err
		}
	}
	tools, err := c.ToolSet(s)
	return p, tools, err
}

func fillHistory(c *catalog.Catalog, s *catalog.Server, p *ServerPage) error {
	labels, err := c.Labels(s.ID)
	if err != nil {
		return err
	}
	spans, err := c.Timeline(s.ID)
	if err != nil {
		return err
	}
	changes, err := c.ChangesOf([]string{s.ID}, catalog.MaxTargetChanges)
	if err != nil {
		return err
	}
	if p.ClientReports, err = c.ClientReports(s.ID); err != nil {
		return err
	}
	p.Labels = convertAll(labels, toLabelRow)
	p.Timeline = convertAll(spans, toTimelineRow)
	p.Changes = ChangeRows(c, changes)
	if p.ClientReports == nil {
		p.ClientReports = []catalog.ReportRow{}
	}
	return nil
}

func convertAll[T, U any](in []T, f func(*T) U) []U {
	out := make([]U, len(in))
	for i := range in {
		out[i] = f(&in[i])
	}
	return out
}

func toLabelRow(l *state.LabelRef) LabelRow {
	return LabelRow{
		ID: l.ID, Method: l.Method, Verdict: l.Verdict, Subject: l.Subject,
		ObservedAt: catalog.FormatTime(l.ObservedAt), IssuedAt: catalog.FormatTime(l.IssuedAt),
		Digest: l.Digest, LeafIndex: l.LeafIndex, MethodShort: ShortMethod(l.Method),
	}
}

func toTimelineRow(sp *state.Span) TimelineRow {
	var count *int
	if sp.SubjectDigest != "" {
		count = &sp.ToolCount
	}
	return TimelineRow{
		From: catalog.FormatTime(sp.From), Until: catalog.FormatTime(sp.Until), Count: sp.Count,
		Status: sp.Status, Detail: NullString(sp.Detail), ToolSetDigest: NullString(sp.ToolSetDigest),
		SubjectDigest: NullString(sp.SubjectDigest), ToolCount: count,
		ServerName: NullString(sp.ServerName), ServerVersion: NullString(sp.ServerVersion),
	}
}
