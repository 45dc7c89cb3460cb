package views

import (
	"encoding/json"

	"github.com/histor-observer/histor/crawl/state"
	"github.com/histor-observer/histor/node/catalog"
)

// ChangeRow is one change as HISTOR's store writes it (the changes row
// joined with its target's name, endpoint and title), plus our own key.
type ChangeRow struct {
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

// ToChangeRow is ch as a row, joined with its target's current name,
// endpoint and title in c.
func ToChangeRow(c *catalog.Catalog, ch *state.Change) ChangeRow {
	row := ChangeRow{
		ID: ch.Seq, TargetID: ch.TargetID, ObservedAt: catalog.FormatTime(ch.At),
		FromSubject: NullString(ch.FromSubject), ToSubject: NullString(ch.ToSubject),
		FromToolset: NullString(ch.Before), ToToolset: NullString(ch.After), Summary: ch.Summary,
		LabelID: NullString(ch.LabelID), Name: ch.Name, Endpoint: ch.Endpoint, ChangeKey: ch.ID,
	}
	if !json.Valid(row.Summary) {
		row.Summary = emptySummary
	}
	// HISTOR joins the target's current name, endpoint and title.
	if s := c.ByID(ch.TargetID); s != nil {
		row.Name, row.Endpoint, row.Title = s.Name, s.Endpoint, NullString(s.Title)
	}
	return row
}

// ChangeRows is each of cs as ToChangeRow makes it, in order.
func ChangeRows(c *catalog.Catalog, cs []state.Change) []ChangeRow {
	out := make([]ChangeRow, len(cs))
	for i := range cs {
		out[i] = ToChangeRow(c, &cs[i])
	}
	return out
}
