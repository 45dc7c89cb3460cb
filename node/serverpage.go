package node

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/histor-observer/histor/crawl/state"
	"github.com/histor-observer/histor/node/catalog"
	"github.com/histor-observer/histor/node/pkgruns"
)

// serverPage is /api/v1/servers/<id> in HISTOR's member order; tools is
// spliced in after it as the stored bytes (a tool set can be megabytes).
type serverPage struct {
	Server         serverSummary       `json:"server"`
	Description    *string             `json:"description"` // the registry's, clipped
	Descriptor     json.RawMessage     `json:"descriptor"`
	PatternMatches []catalog.Match     `json:"patternMatches"`
	Classifier     *struct{}           `json:"classifier"` // no classifier: always null
	Labels         []labelRow          `json:"labels"`
	Timeline       []timelineRow       `json:"timeline"`
	Changes        []changeRow         `json:"changes"`
	ClientReports  []catalog.ReportRow `json:"clientReports"`
	// Observers and Agreement are the peer view of the server, as /check
	// carries them; left out when the node keeps no view.
	Observers []any          `json:"observers,omitempty"`
	Agreement map[string]any `json:"agreement,omitempty"`
	// Package is a package server's sandbox runs (node/pkgruns); left
	// out for an endpoint.
	Package *pkgruns.Member `json:"package,omitempty"`
}

type labelRow struct {
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

type timelineRow struct {
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

// serveServer answers /api/v1/servers/<id>.
func (a *api) serveServer(w http.ResponseWriter, r *http.Request, id string) {
	rd := a.reader(w)
	if rd == nil {
		return
	}
	var s *catalog.Server
	if len(id) <= maxServerIDBytes {
		s = rd.Catalog.ByID(id)
	}
	if s == nil {
		a.fail(w, http.StatusNotFound, "unknown server")
		return
	}
	b, err := a.serverRecord(rd.Catalog, s, rd.now())
	if err != nil {
		a.internal(w, r, "reading server", err)
		return
	}
	writeBody(w, "application/json", b)
}

// serverRecord is the /api/v1/servers/<id> answer for s (also the MCP
// face's server tool).
func (a *api) serverRecord(c *catalog.Catalog, s *catalog.Server, now time.Time) ([]byte, error) {
	page, tools, err := a.buildServerPage(c, s, now)
	if err != nil {
		return nil, err
	}
	body, err := encodeJSON(page)
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

// buildServerPage gathers one server's page and its stored tool set.
func (a *api) buildServerPage(c *catalog.Catalog, s *catalog.Server, now time.Time) (*serverPage, []byte, error) {
	p := &serverPage{Server: summarizeServer(s, now), Description: nullStr(s.Description)}
	var err error
	if p.Descriptor, err = c.Descriptor(s); err != nil {
		return nil, nil, err
	}
	if p.PatternMatches, err = c.PatternMatches(s); err != nil {
		return nil, nil, err
	}
	if err = a.fillHistory(c, s, p); err != nil {
		return nil, nil, err
	}
	if a.fed != nil {
		if p.Observers, p.Agreement, err = a.fed.viewMembers(s.ID); err != nil {
			return nil, nil, err
		}
	}
	if a.packages != nil {
		if p.Package, err = a.packages.Member(s); err != nil {
			return nil, nil, err
		}
	}
	tools, err := c.ToolSet(s)
	return p, tools, err
}

func (a *api) fillHistory(c *catalog.Catalog, s *catalog.Server, p *serverPage) error {
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
	p.Changes = changeRows(c, changes)
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

func toLabelRow(l *state.LabelRef) labelRow {
	return labelRow{
		ID: l.ID, Method: l.Method, Verdict: l.Verdict, Subject: l.Subject,
		ObservedAt: catalog.FormatTime(l.ObservedAt), IssuedAt: catalog.FormatTime(l.IssuedAt),
		Digest: l.Digest, LeafIndex: l.LeafIndex, MethodShort: shortMethod(l.Method),
	}
}

func toTimelineRow(sp *state.Span) timelineRow {
	var count *int
	if sp.SubjectDigest != "" {
		count = &sp.ToolCount
	}
	return timelineRow{
		From: catalog.FormatTime(sp.From), Until: catalog.FormatTime(sp.Until), Count: sp.Count,
		Status: sp.Status, Detail: nullStr(sp.Detail), ToolSetDigest: nullStr(sp.ToolSetDigest),
		SubjectDigest: nullStr(sp.SubjectDigest), ToolCount: count,
		ServerName: nullStr(sp.ServerName), ServerVersion: nullStr(sp.ServerVersion),
	}
}
