package node

import (
	"encoding/json"
	"net/http"

	"github.com/histor-observer/histor/crawl/state"
	"github.com/histor-observer/histor/internal/httpx"
	"github.com/histor-observer/histor/node/catalog"
)

// Bounds of /api/v1/changes, HISTOR's.
const (
	defaultChangesLimit = 50
	maxChangesLimit     = 200
)

// changeRow is one change as HISTOR's store writes it (the changes row
// joined with its target's name, endpoint and title), plus our own key.
type changeRow struct {
	ID          int64           `json:"id"`
	TargetID    string          `json:"target_id"`
	ObservedAt  string          `json:"observed_at"`
	FromSubject *string         `json:"from_subject"`
	ToSubject   *string         `json:"to_subject"`
	FromToolset *string         `json:"from_toolset"`
	ToToolset   *string         `json:"to_toolset"`
	Summary     json.RawMessage `json:"summary"`
	LabelID     *string         `json:"label_id"`
	Name        string          `json:"name"`
	Endpoint    string          `json:"endpoint"`
	Title       *string         `json:"title"`
	// ChangeKey is the crawl's own stable id of the change (a hash of
	// target, subjects and time), beside HISTOR's integer id.
	ChangeKey string `json:"changeKey"`
}

// emptySummary stands in for a change stored without one.
var emptySummary = json.RawMessage(`{"added":[],"removed":[],"modified":[],"detail":"names-only"}`)

func toChangeRow(c *catalog.Catalog, ch *state.Change) changeRow {
	row := changeRow{
		ID: ch.Seq, TargetID: ch.TargetID, ObservedAt: catalog.FormatTime(ch.At),
		FromSubject: nullStr(ch.FromSubject), ToSubject: nullStr(ch.ToSubject),
		FromToolset: nullStr(ch.Before), ToToolset: nullStr(ch.After), Summary: ch.Summary,
		LabelID: nullStr(ch.LabelID), Name: ch.Name, Endpoint: ch.Endpoint, ChangeKey: ch.ID,
	}
	if !json.Valid(row.Summary) {
		row.Summary = emptySummary
	}
	// HISTOR joins the target's current name, endpoint and title.
	if s := c.ByID(ch.TargetID); s != nil {
		row.Name, row.Endpoint, row.Title = s.Name, s.Endpoint, nullStr(s.Title)
	}
	return row
}

func changeRows(c *catalog.Catalog, cs []state.Change) []changeRow {
	out := make([]changeRow, len(cs))
	for i := range cs {
		out[i] = toChangeRow(c, &cs[i])
	}
	return out
}

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
		limit.Value = defaultChangesLimit
	}
	switch {
	case limit.Value < 1 || limit.Value > maxChangesLimit:
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
		Changes []changeRow `json:"changes"`
	}{changeRows(rd.Catalog, cs)})
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
	a.writeJSON(w, r, toChangeRow(rd.Catalog, ch))
}
