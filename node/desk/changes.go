package desk

import (
	"encoding/json"
	"net/http"
	"slices"
	"strconv"

	"github.com/histor-observer/histor/crawl/state"
	"github.com/histor-observer/histor/internal/httpx"
	"github.com/histor-observer/histor/node/views"
)

// serveChanges renders /changes?before=: the changes, newest first, a
// page of views.DefaultChangesLimit at a time.
func (m Mount) serveChanges(w http.ResponseWriter, r *http.Request) {
	md := m.model()
	if md == nil {
		m.render(w, r, http.StatusServiceUnavailable, "notfound", "Changes", "changes", "This node serves no crawl state yet.")
		return
	}
	before := httpx.Uint{Name: "before"}
	if err := httpx.ReadUints(r.URL.RawQuery, &before); err != nil || before.Value > 1<<62 {
		m.render(w, r, http.StatusBadRequest, "notfound", "Changes", "changes", "before must be a change id.")
		return
	}
	cs, err := md.Catalog.Changes(int64(before.Value), views.DefaultChangesLimit)
	if err != nil {
		m.internal(w, r, "listing changes", err)
		return
	}
	rows := views.ChangeRows(md.Catalog, cs)
	v := &ChangesView{Changes: convertAll(rows, toChange)}
	if n := len(cs); n == views.DefaultChangesLimit && cs[n-1].Seq > 1 {
		v.NextURL = "/changes?before=" + strconv.FormatInt(cs[n-1].Seq, 10)
	}
	m.render(w, r, http.StatusOK, "changes", "Changes", "changes", v)
}

// serveChange renders /changes/<id>: one change and its diff.
func (m Mount) serveChange(w http.ResponseWriter, r *http.Request) {
	md := m.model()
	seq, ok := state.ParseSeq(r.PathValue("change_id"))
	if md == nil || !ok {
		m.notFound(w, r, "This observer has no change with that id.")
		return
	}
	ch, err := md.Catalog.Change(seq)
	if err != nil {
		m.internal(w, r, "reading change", err)
		return
	}
	if ch == nil {
		m.notFound(w, r, "This observer has no change with that id.")
		return
	}
	row := views.ToChangeRow(md.Catalog, ch)
	c := toChange(&row)
	m.render(w, r, http.StatusOK, "change", "Change of "+c.Name, "changes", &ChangeView{Change: c})
}

// changeSummary is the stored summary of a change, as crawl/diff writes it.
type changeSummary struct {
	Added    []string `json:"added"`
	Removed  []string `json:"removed"`
	Modified []struct {
		Tool   string                     `json:"tool"`
		Fields map[string]json.RawMessage `json:"fields"`
	} `json:"modified"`
	Detail       string   `json:"detail"`
	NewAddresses []string `json:"newAddresses"`
	Renamed      []struct {
		From string `json:"from"`
		To   string `json:"to"`
	} `json:"renamed"`
	SerializationOnly bool `json:"serializationOnly"`
}

// toChange is one change as the pages show it, its stored summary read
// into the tools and members it changed.
func toChange(row *views.ChangeRow) Change {
	c := Change{ID: row.ID, URL: "/changes/" + strconv.FormatInt(row.ID, 10), ServerID: row.TargetID,
		Name: row.Name, ObservedAt: row.ObservedAt, FromToolSet: deref(row.FromToolset), ToToolSet: deref(row.ToToolset)}
	if row.LabelID != nil {
		c.LabelID, c.LabelURL = *row.LabelID, "/api/v1/labels/"+*row.LabelID
	}
	var s changeSummary
	if json.Unmarshal(row.Summary, &s) != nil {
		return c // a summary that does not read leaves the digests only
	}
	c.Added, c.Removed, c.NewAddresses = s.Added, s.Removed, s.NewAddresses
	c.NamesOnly, c.SerializationOnly = s.Detail == "names-only", s.SerializationOnly
	for _, rn := range s.Renamed {
		c.Renamed = append(c.Renamed, rn.From+" → "+rn.To)
	}
	for _, m := range s.Modified {
		c.Modified = append(c.Modified, ToolDiff{Tool: m.Tool, Fields: fieldDiffs(m.Fields)})
	}
	return c
}

// fieldDiffs reads one tool's changed members: a word diff ([[op, text]…])
// for text, a path list for JSON members; by member name.
func fieldDiffs(fields map[string]json.RawMessage) []FieldDiff {
	names := make([]string, 0, len(fields))
	for k := range fields {
		names = append(names, k)
	}
	slices.Sort(names)
	out := make([]FieldDiff, 0, len(names))
	for _, name := range names {
		f := FieldDiff{Field: name}
		var words [][2]string
		if json.Unmarshal(fields[name], &words) == nil {
			for _, w := range words {
				f.Words = append(f.Words, WordRun{Op: w[0], Text: w[1]})
			}
		} else {
			var paths []json.RawMessage
			json.Unmarshal(fields[name], &paths) // unreadable: no paths shown
			for _, p := range paths {
				f.Paths = append(f.Paths, string(p))
			}
		}
		out = append(out, f)
	}
	return out
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
