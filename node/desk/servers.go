package desk

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/histor-observer/histor/log/canon"
	"github.com/histor-observer/histor/node/catalog"
	"github.com/histor-observer/histor/node/pkgruns"
	"github.com/histor-observer/histor/node/views"
)

// serverStates are the filters of the servers list, the JSON API's, in
// words.
var serverStates = []Option{
	{Value: "all", Label: "All servers"},
	{Value: "pinned", Label: "With a tool set on record"},
	{Value: "changed", Label: "Changed at least once"},
	{Value: "flagged", Label: "With pattern matches"},
	{Value: "unobserved", Label: "No tool set on record"},
	{Value: views.StateSplitName, Label: "Split: observers disagree"},
}

// serveServers renders / and /servers: the servers list, searched and
// filtered as /api/v1/servers is.
func (m Mount) serveServers(w http.ResponseWriter, r *http.Request) {
	md := m.model()
	v := &ServersView{State: "all", States: statesFor("all")}
	if md == nil {
		// The home page of a node that only witnesses: an empty list, said so.
		v.Error = "This node serves no crawl state, so it lists no servers."
		m.render(w, r, http.StatusOK, "servers", "Servers", "servers", v)
		return
	}
	q, err := views.ParseServersQuery(r.URL.RawQuery)
	v.Query = r.URL.Query().Get("q")
	if s := r.URL.Query().Get("state"); s != "" {
		v.State = s
	}
	v.States = statesFor(v.State)
	if err != nil {
		v.Error = err.Error()
		m.render(w, r, http.StatusBadRequest, "servers", "Servers", "servers", v)
		return
	}
	var page []*catalog.Server
	v.Total, page = views.SearchServers(md.Catalog, q, m.sources().Peers)
	now := md.Now()
	v.Rows = make([]ServerRow, len(page))
	for i, s := range page {
		v.Rows[i] = serverRow(s, now)
	}
	if len(page) > 0 {
		v.From, v.To = int(q.Offset)+1, int(q.Offset)+len(page)
	}
	v.PrevURL, v.NextURL = pageLinks(q.Q, v.State, int(q.Limit), int(q.Offset), v.Total)
	m.render(w, r, http.StatusOK, "servers", "Servers", "servers", v)
}

func statesFor(selected string) []Option {
	out := make([]Option, len(serverStates))
	for i, o := range serverStates {
		o.Selected = o.Value == selected
		out[i] = o
	}
	return out
}

// pageLinks are the previous and next pages of a list, "" at its ends.
func pageLinks(q, state string, limit, offset, total int) (prev, next string) {
	link := func(off int) string {
		v := url.Values{}
		if q != "" {
			v.Set("q", q)
		}
		if state != "" && state != "all" {
			v.Set("state", state)
		}
		if limit != views.DefaultServersLimit {
			v.Set("limit", strconv.Itoa(limit))
		}
		if off > 0 {
			v.Set("offset", strconv.Itoa(off))
		}
		if len(v) == 0 {
			return "/servers"
		}
		return "/servers?" + v.Encode()
	}
	if offset > 0 {
		prev = link(max(0, offset-limit))
	}
	if offset+limit < total {
		next = link(offset + limit)
	}
	return prev, next
}

// serverRow is one server as the list shows it.
func serverRow(s *catalog.Server, now time.Time) ServerRow {
	msg, state := views.BadgeState(s, now)
	row := ServerRow{ID: s.ID, Name: s.Name, Title: s.Title, Endpoint: s.Endpoint, State: state,
		StateText: msg, LastObserved: catalog.FormatTime(s.Obs.LastOK), ToolCount: "—", Changed: state == "changed"}
	if s.Obs.Subject != "" {
		row.ToolCount = strconv.Itoa(s.Obs.ToolCount)
	}
	return row
}

// serveServer renders /s/<id>: one server's page, from what
// /api/v1/servers/<id> answers.
func (m Mount) serveServer(w http.ResponseWriter, r *http.Request) {
	md := m.model()
	var s *catalog.Server
	if md != nil {
		s = views.ServerByID(md.Catalog, r.PathValue("target_id"))
	}
	if s == nil {
		m.notFound(w, r, "This observer has no server with that id.")
		return
	}
	page, tools, err := views.BuildServerPage(md.Catalog, s, md.Now(), m.sources())
	if err != nil {
		m.internal(w, r, "reading server", err)
		return
	}
	v, err := serverView(s, page, tools, md.Now(), publicBase(md, r))
	if err != nil {
		m.internal(w, r, "building server page", err)
		return
	}
	m.render(w, r, http.StatusOK, "server", s.Name, "servers", v)
}

// publicBase is where the badge snippet points: the configured base, or
// this request's host.
func publicBase(md *Model, r *http.Request) string {
	if md.PublicBase != "" {
		return md.PublicBase
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

func serverView(s *catalog.Server, p *views.ServerPage, tools []byte, now time.Time, base string) (*ServerView, error) {
	sum := &p.Server
	v := &ServerView{ServerRow: serverRow(s, now), Transport: s.Transport, Version: s.Version,
		Description: s.Description, ToolSetDigest: s.Obs.ToolSetDigest, Subject: s.Obs.Subject,
		FirstPinned: catalog.FormatTime(s.Obs.FirstPinned), UnchangedSince: catalog.FormatTime(s.Obs.UnchangedSince),
		Observations: sum.Observations, Attempts: sum.Attempts, LastStatus: s.Status, LastDetail: s.Detail, Delisted: s.Delisted}
	v.Matches = convertAll(p.PatternMatches, func(m *catalog.Match) Match {
		return Match{Code: m.Code, Severity: m.Severity, Tier: m.Tier, Tool: m.Tool, Where: m.Where, Span: m.Span}
	})
	var err error
	if v.Tools, err = toTools(tools, v.Matches); err != nil {
		return nil, err
	}
	v.Labels = convertAll(p.Labels, func(l *views.LabelRow) Label {
		return Label{ID: l.ID, Method: l.MethodShort, Verdict: l.Verdict, ObservedAt: l.ObservedAt,
			IssuedAt: l.IssuedAt, URL: "/api/v1/labels/" + l.ID, LeafIndex: l.LeafIndex}
	})
	v.Timeline = convertAll(p.Timeline, toSpan)
	v.Changes = convertAll(p.Changes, toChange)
	v.Observers, v.Agreement = toObservers(p.Observers, p.Agreement, s.Obs.ToolSetDigest)
	v.Badge = toBadge(base, s.ID, v.StateText)
	v.Package = toPackage(p.Package)
	return v, nil
}

// toPackage is the server answer's package member as the desk shows it.
func toPackage(m *pkgruns.Member) *PackageRuns {
	if m == nil {
		return nil
	}
	out := &PackageRuns{Key: m.Key}
	if r := m.LastRun; r != nil {
		d := &PackageRun{Package: r.Package, Version: r.Version, Status: r.Status, ObservedAt: r.ObservedAt,
			Runtime: strings.TrimSpace(r.Runtime.Name + " " + r.Runtime.Version), RootDigest: r.Runtime.RootDigest,
			CallsOK: r.Calls.Successful, CallsTotal: r.Calls.Total, CallsSkipped: r.Calls.Skipped, Complete: r.Complete,
			Provenance: "unknown", Publisher: "unknown", Signals: r.Signals}
		if r.Detail != nil {
			d.Detail = *r.Detail
		}
		if r.BehaviourURL != nil {
			d.BehaviourURL = *r.BehaviourURL
		}
		if f := r.VersionFacts; f != nil {
			d.Provenance, d.Publisher = f.Provenance, f.Publisher
		}
		out.Last = d
	}
	for _, v := range m.Versions {
		out.Versions = append(out.Versions, PackageRun{Version: v.Version, Status: v.Status, ObservedAt: v.ObservedAt})
	}
	return out
}

func toSpan(sp *views.TimelineRow) Span {
	out := Span{From: sp.From, Until: sp.Until, Status: sp.Status, Count: sp.Count}
	if sp.Detail != nil {
		out.Detail = *sp.Detail
	}
	if sp.ToolSetDigest != nil {
		out.ToolSetDigest = *sp.ToolSetDigest
	}
	if sp.ToolCount != nil {
		out.ToolCount = strconv.Itoa(*sp.ToolCount)
	}
	return out
}

// toTools reads the stored canonical tool set into the page's tools,
// each description with its pattern matches marked.
func toTools(body []byte, matches []Match) ([]Tool, error) {
	if body == nil {
		return nil, nil
	}
	v, err := canon.Parse(body)
	if err != nil {
		return nil, err
	}
	list, _ := v.([]any)
	out := make([]Tool, 0, len(list))
	for _, e := range list {
		m, _ := e.(map[string]any)
		t := Tool{}
		t.Name, _ = m["name"].(string)
		desc, _ := m["description"].(string)
		var spans []string
		for _, mt := range matches {
			if mt.Tool == t.Name {
				t.Matches = append(t.Matches, mt)
				spans = append(spans, mt.Span)
			}
		}
		t.Description = Highlight(desc, spans)
		t.Schema = indentJSON(m["inputSchema"])
		if o, ok := m["outputSchema"]; ok {
			t.Output = indentJSON(o)
		}
		out = append(out, t)
	}
	return out, nil
}

func indentJSON(v any) string {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return ""
	}
	return string(b)
}

// toBadge is the snippet a server's author copies.
func toBadge(base, id, text string) Badge {
	svg := base + "/badge/" + id + ".svg"
	page := base + "/s/" + id
	alt := views.BadgeLabel + ": " + text
	return Badge{SVGURL: "/badge/" + id + ".svg", PageURL: page, Alt: alt,
		Markdown: "[![" + alt + "](" + svg + ")](" + page + ")",
		HTML:     `<a href="` + page + `"><img src="` + svg + `" alt="` + alt + `"></a>`}
}
