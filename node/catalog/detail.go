package catalog

import (
	"cmp"
	"encoding/json"
	"errors"
	"slices"
	"sort"
	"time"

	"github.com/histor-observer/histor/crawl/state"
	hlog "github.com/histor-observer/histor/log"
)

// Bounds of the per-target lists, HISTOR's.
const (
	MaxLabels        = 50  // labels_for's limit
	MaxTimeline      = 100 // the server page's timeline rows
	MaxTargetChanges = 20  // the server page's changes
	MaxReportRows    = 20  // client_reports' limit
	ReportDays       = 30  // the window of the server page's client reports
)

// TimeFormat is how HISTOR writes every time: UTC, whole seconds, "Z".
const TimeFormat = "2006-01-02T15:04:05Z"

// FormatTime writes t in TimeFormat; "" for the zero time.
func FormatTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(TimeFormat)
}

// Labels returns up to MaxLabels labels issued for target id, the latest
// (highest leaf index) first.
func (c *Catalog) Labels(id string) ([]state.LabelRef, error) {
	ls, err := c.opt.Store.Labels(id)
	if err != nil {
		return nil, err
	}
	slices.Reverse(ls)
	return ls[:min(len(ls), MaxLabels)], nil
}

// Timeline returns up to MaxTimeline spans of target id's timeline, the
// latest first.
func (c *Catalog) Timeline(id string) ([]state.Span, error) {
	sp, err := c.opt.Store.Spans(id)
	if err != nil {
		return nil, err
	}
	slices.Reverse(sp)
	return sp[:min(len(sp), MaxTimeline)], nil
}

// Seen is HISTOR's store.toolset_seen answer: when a tool-set digest was
// first and last observed at a target, and in how many attempts.
type Seen struct {
	FirstSeen    time.Time
	LastSeen     time.Time
	Observations int
}

// MarshalJSON writes HISTOR's {"first_seen","last_seen","observations"}.
func (s Seen) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		FirstSeen    string `json:"first_seen"`
		LastSeen     string `json:"last_seen"`
		Observations int    `json:"observations"`
	}{FormatTime(s.FirstSeen), FormatTime(s.LastSeen), s.Observations})
}

// ToolSetSeen reports whether target id was ever observed serving the tool
// set with digest, from its timeline; nil when never.
func (c *Catalog) ToolSetSeen(id, digest string) (*Seen, error) {
	if digest == "" {
		return nil, nil
	}
	sp, err := c.opt.Store.Spans(id)
	if err != nil {
		return nil, err
	}
	var s *Seen
	for _, x := range sp {
		if x.ToolSetDigest != digest {
			continue
		}
		if s == nil {
			s = &Seen{FirstSeen: x.From, LastSeen: x.Until}
		}
		s.FirstSeen = minTime(s.FirstSeen, x.From)
		s.LastSeen = maxTime(s.LastSeen, x.Until)
		s.Observations += x.Count
	}
	return s, nil
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// Change returns the change with HISTOR's integer id seq, or nil.
func (c *Catalog) Change(seq int64) (*state.Change, error) {
	ch, err := c.opt.Store.ChangeBySeq(seq)
	if errors.Is(err, state.ErrNotFound) {
		return nil, nil
	}
	return ch, err
}

// Changes returns up to limit changes with an id below before (before ≤ 0:
// from the newest), the newest first. It reads the store, so a change
// committed since the last Reload is already listed.
func (c *Catalog) Changes(before int64, limit int) ([]state.Change, error) {
	return c.opt.Store.ChangesBefore(before, limit)
}

// ChangesOf returns up to limit changes of the given targets, the newest
// (highest id) first, as of the last Reload.
func (c *Catalog) ChangesOf(ids []string, limit int) ([]state.Change, error) {
	snap := c.current()
	var seqs []int64
	for _, id := range ids {
		if s := snap.byID[id]; s != nil {
			seqs = append(seqs, s.changeSeqs[:min(len(s.changeSeqs), limit)]...)
		}
	}
	slices.SortFunc(seqs, func(a, b int64) int { return cmp.Compare(b, a) })
	seqs = slices.Compact(seqs)
	out := make([]state.Change, 0, min(len(seqs), limit))
	for _, seq := range seqs[:min(len(seqs), limit)] {
		ch, err := c.opt.Store.ChangeBySeq(seq)
		if err != nil {
			return nil, err
		}
		out = append(out, *ch)
	}
	return out, nil
}

// ChangesSince counts the change records at or after t (as of the last Reload).
func (c *Catalog) ChangesSince(t time.Time) int {
	ts := c.current().changeTimes
	i := sort.Search(len(ts), func(i int) bool { return !ts[i].Before(t) })
	return len(ts) - i
}

// LastRun returns the latest crawl run and how many runs there were (its
// HISTOR-style id); nil before the first.
func (c *Catalog) LastRun() (*state.Run, int) {
	s := c.current()
	return s.lastRun, s.runs
}

// ToolSet returns the canonical tool set of s's current subject (its
// evidence bytes), or nil when it has none.
func (c *Catalog) ToolSet(s *Server) ([]byte, error) {
	return c.evidence("toolsets", s.Obs.ToolSetDigest)
}

// Descriptor returns the subject descriptor of s's current subject (JCS
// bytes), or nil when it has none.
func (c *Catalog) Descriptor(s *Server) ([]byte, error) {
	return c.evidence("descriptors", s.Obs.Subject)
}

func (c *Catalog) evidence(kind, sri string) ([]byte, error) {
	if sri == "" {
		return nil, nil
	}
	b, err := c.opt.Log.Evidence(kind, sri)
	if errors.Is(err, hlog.ErrNotFound) {
		// The state names evidence the log never stored (a crash between
		// the two writes cannot do this, the log is written first, but a
		// restored state could): show the page without it.
		c.opt.Logger.Warn("evidence named by the crawl state is missing", "kind", kind, "sri", sri)
		return nil, nil
	}
	return b, err
}
