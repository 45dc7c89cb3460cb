package node

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/histor-observer/histor/internal/httpx"
	"github.com/histor-observer/histor/log/canon"
	"github.com/histor-observer/histor/node/catalog"
)

// ReadAPI is what the reading API serves from: /api/v1/servers, changes,
// stats and badges, /badge/<id>.svg and /feed.xml. Without one those routes
// answer 503.
type ReadAPI struct {
	// Catalog is the read model of the crawl. Required.
	Catalog *catalog.Catalog
	// PublicBase is the absolute URL the feed's links start with, e.g.
	// "https://observer.example.org". "" uses http://<the request's Host>.
	PublicBase string
	// CrawlInterval is reported by /api/v1/stats (crawl.intervalSeconds)
	// and ages the sth badge; 0 when the node does not crawl.
	CrawlInterval time.Duration
	// Now is the clock of badges and "since" windows. Default time.Now.
	Now func() time.Time
}

func (r *ReadAPI) now() time.Time {
	if r.Now == nil {
		return time.Now()
	}
	return r.Now()
}

// SetReadAPI serves the reading API from r. The log must be open (Open);
// a node closed and opened again needs it set again.
func (n *Node) SetReadAPI(r ReadAPI) error {
	if r.Catalog == nil {
		return errors.New("setting read API: Catalog is required")
	}
	a := n.api.Load()
	if a == nil {
		return errors.New("setting read API: log not open")
	}
	a.setReadAPI(&r)
	return nil
}

func (a *api) setReadAPI(r *ReadAPI) { a.read.Store(r) }

// reader returns the read API, answering 503 itself when there is none.
func (a *api) reader(w http.ResponseWriter) *ReadAPI {
	rd := a.read.Load()
	if rd == nil {
		a.fail(w, http.StatusServiceUnavailable, "this node serves no crawl state")
	}
	return rd
}

// Bounds of /api/v1/servers, HISTOR's.
const (
	defaultServersLimit = 50
	maxServersLimit     = 200
	maxServersOffset    = 10_000_000
	maxStateRunes       = 20
	maxServerIDBytes    = 64 // real ids are 16 hex characters
)

// serveServers answers /api/v1/servers?q=&state=&limit=&offset=.
func (a *api) serveServers(w http.ResponseWriter, r *http.Request) {
	rd := a.reader(w)
	if rd == nil {
		return
	}
	q, st, limit, offset, err := serversQuery(r.URL.RawQuery)
	if err != nil {
		a.fail(w, http.StatusBadRequest, err.Error())
		return
	}
	var total int
	var page []*catalog.Server
	if st == stateSplit {
		total, page = a.splitServers(rd.Catalog, q, int(limit), int(offset))
	} else {
		total, page = rd.Catalog.Search(q, st, int(limit), int(offset))
	}
	body, err := appendServers(make([]byte, 0, 64+len(page)*summaryBytes), total, offset, limit, page, rd.now())
	if err != nil {
		a.internal(w, r, "encoding servers", err)
		return
	}
	writeBody(w, "application/json", body)
}

// state=split is not one of the catalog's states (those come from this
// node's own crawl state); it is the peer view's, so the node filters it here.
const (
	stateSplitName = "split"
	stateSplit     = catalog.State(-1)
)

// splitServers is the listed servers whose observers are in a split view,
// by id, those matching q (a substring of name, endpoint or title, as
// Search matches) when q is given.
func (a *api) splitServers(c *catalog.Catalog, q string, limit, offset int) (int, []*catalog.Server) {
	var ids []string
	if a.fed != nil {
		ids = a.fed.splitServers()
	}
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

// summaryBytes is about how long one encoded summary is.
const summaryBytes = 800

// appendServers writes the /api/v1/servers answer, byte for byte what
// writeJSON makes of {total, offset, limit, servers: [serverSummary…]},
// from each server's summary encoded once per catalog snapshot.
func appendServers(b []byte, total int, offset, limit uint64, page []*catalog.Server, now time.Time) ([]byte, error) {
	b = strconv.AppendInt(append(b, `{"total":`...), int64(total), 10)
	b = strconv.AppendUint(append(b, `,"offset":`...), offset, 10)
	b = strconv.AppendUint(append(b, `,"limit":`...), limit, 10)
	b = append(b, `,"servers":[`...)
	for i, s := range page {
		if i > 0 {
			b = append(b, ',')
		}
		var err error
		if b, err = appendSummary(b, s, now); err != nil {
			return nil, err
		}
	}
	return append(b, "]}"...), nil
}

// encodedSummary is one server's summary as writeJSON encodes it, but for
// the two members that age with the clock (state and badgeText), which
// each answer writes itself: head is everything before ,"state" and tail
// everything after badgeText's value.
type encodedSummary struct {
	head, tail []byte
	err        error
}

// agingMembers is how state and badgeText encode when both are "". The
// bytes occur once: inside an encoded string every quote is escaped, so
// `,"` and `":` only ever appear between members.
const agingMembers = `,"state":"","badgeText":""`

func encodeSummary(s *catalog.Server) any {
	sum := summarizeServer(s, time.Time{})
	sum.State, sum.BadgeText = "", ""
	b, err := encodeJSON(sum)
	if err != nil {
		return &encodedSummary{err: fmt.Errorf("encoding summary of %s: %w", s.ID, err)}
	}
	head, tail, ok := bytes.Cut(b, []byte(agingMembers))
	if !ok {
		return &encodedSummary{err: fmt.Errorf("encoding summary of %s: no state member", s.ID)}
	}
	return &encodedSummary{head: head, tail: tail}
}

// appendSummary writes s's summary as of now from its cached encoding.
func appendSummary(b []byte, s *catalog.Server, now time.Time) ([]byte, error) {
	e := s.Memo(encodeSummary).(*encodedSummary)
	if e.err != nil {
		return nil, e.err
	}
	msg, state := badgeState(s, now)
	b = append(append(b, e.head...), `,"state":`...)
	b = appendJSONString(b, state)
	b = appendJSONString(append(b, `,"badgeText":`...), msg)
	return append(b, e.tail...), nil
}

// appendJSONString writes s as encodeJSON does. The badge texts and states
// it is given need no escapes, so they are copied; anything else takes
// encoding/json's own path.
func appendJSONString(b []byte, s string) []byte {
	if plainJSON(s) {
		return append(append(append(b, '"'), s...), '"')
	}
	enc, err := encodeJSON(s) // a string always encodes
	if err != nil {
		return append(b, `""`...)
	}
	return append(b, enc...)
}

// plainJSON says encoding/json, without HTML escaping, writes s unchanged
// between quotes: valid UTF-8 with no control character, quote, backslash,
// U+2028 or U+2029.
func plainJSON(s string) bool {
	for _, r := range s {
		if r < 0x20 || r == '"' || r == '\\' || r == utf8.RuneError || r == '\u2028' || r == '\u2029' {
			return false
		}
	}
	return true
}

func serversQuery(raw string) (q string, st catalog.State, limit, offset uint64, err error) {
	qp, sp := httpx.String{Name: "q"}, httpx.String{Name: "state"}
	lp, op := httpx.Uint{Name: "limit"}, httpx.Uint{Name: "offset"}
	if err = httpx.ReadStrings(raw, &qp, &sp); err != nil {
		return
	}
	if err = httpx.ReadUints(raw, &lp, &op); err != nil {
		return
	}
	limit, offset = defaultServersLimit, op.Value
	if lp.Present {
		limit = lp.Value
	}
	switch {
	case utf8.RuneCountInString(qp.Value) > catalog.MaxQueryRunes:
		err = &httpx.ParamError{Name: "q", Why: "must be at most 200 characters"}
	case limit < 1 || limit > maxServersLimit:
		err = &httpx.ParamError{Name: "limit", Why: "must be between 1 and 200"}
	case offset > maxServersOffset:
		err = &httpx.ParamError{Name: "offset", Why: "must be at most 10000000"}
	}
	if err != nil {
		return
	}
	st, ok := catalog.StateAll, true
	switch {
	case sp.Value == stateSplitName:
		st = stateSplit
	case sp.Present:
		st, ok = catalog.ParseState(sp.Value)
	}
	if !ok || utf8.RuneCountInString(sp.Value) > maxStateRunes {
		err = &httpx.ParamError{Name: "state", Why: "must be one of all, pinned, changed, flagged, unobserved, split"}
	}
	return qp.Value, st, limit, offset, err
}

// serverSummary is one server as HISTOR's target_summary writes it; null
// where HISTOR's column is NULL.
type serverSummary struct {
	ID              string  `json:"id"`
	Name            string  `json:"name"`
	Title           *string `json:"title"`
	Endpoint        string  `json:"endpoint"`
	Transport       string  `json:"transport"`
	Version         *string `json:"version"`
	Repository      *string `json:"repository"`
	Website         *string `json:"website"`
	Delisted        bool    `json:"delisted"`
	SkipReason      *string `json:"skipReason"`
	LastStatus      *string `json:"lastStatus"`
	LastDetail      *string `json:"lastDetail"`
	LastAttempt     *string `json:"lastAttempt"`
	LastObserved    *string `json:"lastObserved"`
	ToolCount       *int    `json:"toolCount"`
	SubjectDigest   *string `json:"subjectDigest"`
	ToolSetDigest   *string `json:"toolSetDigest"`
	FirstPinned     *string `json:"firstPinned"`
	UnchangedSince  *string `json:"unchangedSince"`
	Observations    int     `json:"observations"`
	Attempts        int     `json:"attempts"`
	Changes         int     `json:"changes"`
	BlockMatches    int     `json:"blockMatches"`
	AdviseMatches   int     `json:"adviseMatches"`
	RecordMatches   int     `json:"recordMatches"`
	State           string  `json:"state"`
	BadgeText       string  `json:"badgeText"`
	ClassifierModel *string `json:"classifierModel"` // no classifier: always null
	ClassifierFlags *int    `json:"classifierFlags"`
	RegistryStatus  string  `json:"registryStatus"` // ours: active, deprecated or deleted
}

func summarizeServer(s *catalog.Server, now time.Time) serverSummary {
	o := &s.Obs
	msg, state := badgeState(s, now)
	lastAttempt := s.LastCrawled
	if lastAttempt.IsZero() {
		lastAttempt = o.ObservedAt
	}
	var count *int
	if o.Subject != "" {
		count = &o.ToolCount
	}
	return serverSummary{
		ID: s.ID, Name: s.Name, Title: nullStr(s.Title), Endpoint: s.Endpoint, Transport: s.Transport,
		Version: nullStr(s.Version), Repository: nullStr(s.Repository), Website: nullStr(s.Website), Delisted: s.Delisted, SkipReason: nullStr(s.Skip),
		LastStatus: nullStr(s.Status), LastDetail: nullStr(s.Detail), LastAttempt: nullTime(lastAttempt),
		LastObserved: nullTime(o.LastOK), ToolCount: count, SubjectDigest: nullStr(o.Subject),
		ToolSetDigest: nullStr(o.ToolSetDigest), FirstPinned: nullTime(o.FirstPinned),
		UnchangedSince: nullTime(o.UnchangedSince), Observations: o.OKObservations, Attempts: o.Attempts,
		Changes: s.ChangeCount, BlockMatches: o.BlockMatches, AdviseMatches: o.AdviseMatches,
		RecordMatches: o.RecordMatches, State: state, BadgeText: msg, RegistryStatus: s.RegistryStatus,
	}
}

func nullStr(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func nullTime(t time.Time) *string { return nullStr(catalog.FormatTime(t)) }

// writeJSON answers v as JSON without HTML escaping.
func (a *api) writeJSON(w http.ResponseWriter, r *http.Request, v any) {
	httpx.WriteJSON(w, r, a.logger, v)
}

func encodeJSON(v any) ([]byte, error) { return canon.MarshalPlain(v) }

// fillTargets sets each log entry's target_id from the crawl state, when
// the node has one.
func (a *api) fillTargets(rows []entrySummary) error {
	rd := a.read.Load()
	if rd == nil {
		return nil
	}
	for i := range rows {
		id, err := rd.Catalog.LabelTarget(rows[i].ID)
		if err != nil {
			return err
		}
		rows[i].TargetID = nullStr(id)
	}
	return nil
}
