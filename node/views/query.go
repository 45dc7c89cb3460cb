package views

import (
	"strings"
	"unicode/utf8"

	"github.com/histor-observer/histor/internal/httpx"
	"github.com/histor-observer/histor/node/catalog"
)

// Bounds of /api/v1/servers, HISTOR's.
const (
	// DefaultServersLimit is the page size when the query names none.
	DefaultServersLimit = 50
	maxServersLimit     = 200
	maxServersOffset    = 10_000_000
	maxStateRunes       = 20
	// MaxServerIDBytes bounds a server id looked up; real ids are 16 hex
	// characters.
	MaxServerIDBytes = 64
)

// Bounds of /api/v1/changes, HISTOR's.
const (
	// DefaultChangesLimit is the page size when the query names none.
	DefaultChangesLimit = 50
	// MaxChangesLimit is the largest page asked for.
	MaxChangesLimit = 200
)

// state=split is not one of the catalog's states (those come from this
// node's own crawl state); it is the peer view's, so SearchServers filters
// it apart.
const (
	// StateSplitName is the state filter of servers whose observers are in
	// a split view.
	StateSplitName = "split"
	// StateSplit is StateSplitName as ParseServersQuery reads it.
	StateSplit = catalog.State(-1)
)

// ServersQuery is a servers list's query: ?q=&state=&limit=&offset=.
type ServersQuery struct {
	Q             string
	State         catalog.State
	Limit, Offset uint64
}

// ParseServersQuery reads a servers list's raw query within HISTOR's
// bounds; the error says which parameter is wrong, as the API answers it.
func ParseServersQuery(raw string) (ServersQuery, error) {
	qp, sp := httpx.String{Name: "q"}, httpx.String{Name: "state"}
	lp, op := httpx.Uint{Name: "limit"}, httpx.Uint{Name: "offset"}
	if err := httpx.ReadStrings(raw, &qp, &sp); err != nil {
		return ServersQuery{}, err
	}
	if err := httpx.ReadUints(raw, &lp, &op); err != nil {
		return ServersQuery{}, err
	}
	q := ServersQuery{Q: qp.Value, Limit: DefaultServersLimit, Offset: op.Value}
	if lp.Present {
		q.Limit = lp.Value
	}
	if err := q.checkBounds(); err != nil {
		return q, err
	}
	st, ok := catalog.StateAll, true
	switch {
	case sp.Value == StateSplitName:
		st = StateSplit
	case sp.Present:
		st, ok = catalog.ParseState(sp.Value)
	}
	q.State = st
	if !ok || utf8.RuneCountInString(sp.Value) > maxStateRunes {
		return q, &httpx.ParamError{Name: "state", Why: "must be one of all, pinned, changed, flagged, unobserved, split"}
	}
	return q, nil
}

func (q *ServersQuery) checkBounds() error {
	switch {
	case utf8.RuneCountInString(q.Q) > catalog.MaxQueryRunes:
		return &httpx.ParamError{Name: "q", Why: "must be at most 200 characters"}
	case q.Limit < 1 || q.Limit > maxServersLimit:
		return &httpx.ParamError{Name: "limit", Why: "must be between 1 and 200"}
	case q.Offset > maxServersOffset:
		return &httpx.ParamError{Name: "offset", Why: "must be at most 10000000"}
	}
	return nil
}

// SearchServers is the total and the page of c's servers q asks for; the
// split filter reads split (nil: no server is in a split view).
func SearchServers(c *catalog.Catalog, q ServersQuery, split Peers) (int, []*catalog.Server) {
	if q.State == StateSplit {
		var ids []string
		if split != nil {
			ids = split.SplitServers()
		}
		return splitServers(c, ids, q.Q, int(q.Limit), int(q.Offset))
	}
	return c.Search(q.Q, q.State, int(q.Limit), int(q.Offset))
}

// splitServers is the listed servers of ids, those matching q (a
// substring of name, endpoint or title, as Search matches) when q is given.
func splitServers(c *catalog.Catalog, ids []string, q string, limit, offset int) (int, []*catalog.Server) {
	needle := strings.ToLower(strings.TrimSpace(strings.ReplaceAll(q, "\x00", "")))
	var all []*catalog.Server
	for _, id := range ids {
		s := c.ByID(id)
		if s == nil || s.Delisted || !matchesText(s, needle) {
			continue
		}
		all = append(all, s)
	}
	if offset >= len(all) {
		return len(all), nil
	}
	return len(all), all[offset:min(offset+limit, len(all))]
}

func matchesText(s *catalog.Server, needle string) bool {
	if needle == "" {
		return true
	}
	for _, t := range []string{s.Name, s.Endpoint, s.Title} {
		if strings.Contains(strings.ToLower(t), needle) {
			return true
		}
	}
	return false
}

// ServerByID is c's server id, nil when unknown or longer than any id.
func ServerByID(c *catalog.Catalog, id string) *catalog.Server {
	if len(id) > MaxServerIDBytes {
		return nil
	}
	return c.ByID(id)
}
