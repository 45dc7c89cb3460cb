package readapi

import (
	"net/http"

	"github.com/histor-observer/histor/crawl/state"
	"github.com/histor-observer/histor/internal/httpx"
	"github.com/histor-observer/histor/node/views"
)

// serveServers answers /api/v1/servers?q=&state=&limit=&offset=.
func (m Mount) serveServers(w http.ResponseWriter, r *http.Request) {
	md := m.model(w)
	if md == nil {
		return
	}
	q, err := views.ParseServersQuery(r.URL.RawQuery)
	if err != nil {
		httpx.WriteDetail(w, http.StatusBadRequest, err.Error())
		return
	}
	total, page := views.SearchServers(md.Catalog, q, m.sources().Peers)
	body, err := views.AppendServers(nil, total, q.Offset, q.Limit, page, md.Now())
	if err != nil {
		httpx.Internal(w, r, m.Logger, "encoding servers", err)
		return
	}
	httpx.WriteBody(w, "application/json", body)
}

// serveServer answers /api/v1/servers/<id>.
func (m Mount) serveServer(w http.ResponseWriter, r *http.Request) {
	md := m.model(w)
	if md == nil {
		return
	}
	s := views.ServerByID(md.Catalog, r.PathValue("target_id"))
	if s == nil {
		httpx.WriteDetail(w, http.StatusNotFound, "unknown server")
		return
	}
	b, err := views.ServerRecord(md.Catalog, s, md.Now(), m.sources())
	if err != nil {
		httpx.Internal(w, r, m.Logger, "reading server", err)
		return
	}
	httpx.WriteBody(w, "application/json", b)
}

// serveChanges answers /api/v1/changes?limit=&before=: newest first.
func (m Mount) serveChanges(w http.ResponseWriter, r *http.Request) {
	md := m.model(w)
	if md == nil {
		return
	}
	limit, before := httpx.Uint{Name: "limit"}, httpx.Uint{Name: "before"}
	if err := httpx.ReadUints(r.URL.RawQuery, &limit, &before); err != nil {
		httpx.WriteDetail(w, http.StatusBadRequest, err.Error())
		return
	}
	if !limit.Present {
		limit.Value = views.DefaultChangesLimit
	}
	switch {
	case limit.Value < 1 || limit.Value > views.MaxChangesLimit:
		httpx.WriteDetail(w, http.StatusBadRequest, "limit must be between 1 and 200")
		return
	case before.Present && (before.Value < 1 || before.Value > 1<<62):
		httpx.WriteDetail(w, http.StatusBadRequest, "before must be a change id, at least 1")
		return
	}
	cs, err := md.Catalog.Changes(int64(before.Value), int(limit.Value))
	if err != nil {
		httpx.Internal(w, r, m.Logger, "listing changes", err)
		return
	}
	httpx.WriteJSON(w, r, m.Logger, struct {
		Changes []views.ChangeRow `json:"changes"`
	}{views.ChangeRows(md.Catalog, cs)})
}

// serveChange answers /api/v1/changes/<id>, id being HISTOR's integer id.
func (m Mount) serveChange(w http.ResponseWriter, r *http.Request) {
	md := m.model(w)
	if md == nil {
		return
	}
	seq, ok := state.ParseSeq(r.PathValue("change_id"))
	if !ok {
		httpx.WriteDetail(w, http.StatusBadRequest, "change id must be a positive decimal integer")
		return
	}
	ch, err := md.Catalog.Change(seq)
	if err != nil {
		httpx.Internal(w, r, m.Logger, "reading change", err)
		return
	}
	if ch == nil {
		httpx.WriteDetail(w, http.StatusNotFound, "unknown change")
		return
	}
	httpx.WriteJSON(w, r, m.Logger, views.ToChangeRow(md.Catalog, ch))
}
