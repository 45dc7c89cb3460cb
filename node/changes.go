package node

import (
	"net/http"

	"github.com/histor-observer/histor/crawl/state"
	"github.com/histor-observer/histor/internal/httpx"
	"github.com/histor-observer/histor/node/views"
)

// serveChanges answers /api/v1/changes?limit=&before=: newest first.
func (a *api) serveChanges(w http.ResponseWriter, r *http.Request) {
	rd := a.reader(w)
	if rd == nil {
		return
	}
	limit, before := httpx.Uint{Name: "limit"}, httpx.Uint{Name: "before"}
	if err := httpx.ReadUints(r.URL.RawQuery, &limit, &before); err != nil {
		a.fail(w, http.StatusBadRequest, err.Error())
		return
	}
	if !limit.Present {
		limit.Value = views.DefaultChangesLimit
	}
	switch {
	case limit.Value < 1 || limit.Value > views.MaxChangesLimit:
		a.fail(w, http.StatusBadRequest, "limit must be between 1 and 200")
		return
	case before.Present && (before.Value < 1 || before.Value > 1<<62):
		a.fail(w, http.StatusBadRequest, "before must be a change id, at least 1")
		return
	}
	cs, err := rd.Catalog.Changes(int64(before.Value), int(limit.Value))
	if err != nil {
		a.internal(w, r, "listing changes", err)
		return
	}
	a.writeJSON(w, r, struct {
		Changes []views.ChangeRow `json:"changes"`
	}{views.ChangeRows(rd.Catalog, cs)})
}

// serveChange answers /api/v1/changes/<id>, id being HISTOR's integer id.
func (a *api) serveChange(w http.ResponseWriter, r *http.Request, id string) {
	rd := a.reader(w)
	if rd == nil {
		return
	}
	seq, ok := state.ParseSeq(id)
	if !ok {
		a.fail(w, http.StatusBadRequest, "change id must be a positive decimal integer")
		return
	}
	ch, err := rd.Catalog.Change(seq)
	if err != nil {
		a.internal(w, r, "reading change", err)
		return
	}
	if ch == nil {
		a.fail(w, http.StatusNotFound, "unknown change")
		return
	}
	a.writeJSON(w, r, views.ToChangeRow(rd.Catalog, ch))
}
