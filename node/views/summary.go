package views

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/histor-observer/histor/log/canon"
	"github.com/histor-observer/histor/node/catalog"
)

// Summary is one server as HISTOR's target_summary writes it; null where
// HISTOR's column is NULL.
type Summary struct {
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

// Summarize is s's summary as of now (its badge ages with the clock).
func Summarize(s *catalog.Server, now time.Time) Summary {
	o := &s.Obs
	msg, state := BadgeState(s, now)
	lastAttempt := s.LastCrawled
	if lastAttempt.IsZero() {
		lastAttempt = o.ObservedAt
	}
	var count *int
	if o.Subject != "" {
		count = &o.ToolCount
	}
	return Summary{
		ID: s.ID, Name: s.Name, Title: NullString(s.Title), Endpoint: s.Endpoint, Transport: s.Transport,
		Version: NullString(s.Version), Repository: NullString(s.Repository), Website: NullString(s.Website), Delisted: s.Delisted, SkipReason: NullString(s.Skip),
		LastStatus: NullString(s.Status), LastDetail: NullString(s.Detail), LastAttempt: NullTime(lastAttempt),
		LastObserved: NullTime(o.LastOK), ToolCount: count, SubjectDigest: NullString(o.Subject),
		ToolSetDigest: NullString(o.ToolSetDigest), FirstPinned: NullTime(o.FirstPinned),
		UnchangedSince: NullTime(o.UnchangedSince), Observations: o.OKObservations, Attempts: o.Attempts,
		Changes: s.ChangeCount, BlockMatches: o.BlockMatches, AdviseMatches: o.AdviseMatches,
		RecordMatches: o.RecordMatches, State: state, BadgeText: msg, RegistryStatus: s.RegistryStatus,
	}
}

// NullString is s, or nil (JSON null) for "".
func NullString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// NullTime is t as the catalog writes times, or nil for the zero time.
func NullTime(t time.Time) *string { return NullString(catalog.FormatTime(t)) }

// summaryBytes is about how long one encoded summary is.
const summaryBytes = 800

// AppendServers appends the /api/v1/servers answer to b, byte for byte
// what canon.MarshalPlain makes of {total, offset, limit, servers:
// [Summary…]}, from each server's summary encoded once per catalog
// snapshot.
func AppendServers(b []byte, total int, offset, limit uint64, page []*catalog.Server, now time.Time) ([]byte, error) {
	b = slices.Grow(b, 64+len(page)*summaryBytes)
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

// encodedSummary is one server's summary as canon.MarshalPlain encodes it,
// but for the two members that age with the clock (state and badgeText),
// which each answer writes itself: head is everything before ,"state" and
// tail everything after badgeText's value.
type encodedSummary struct {
	head, tail []byte
	err        error
}

// agingMembers is how state and badgeText encode when both are "". The
// bytes occur once: inside an encoded string every quote is escaped, so
// `,"` and `":` only ever appear between members.
const agingMembers = `,"state":"","badgeText":""`

func encodeSummary(s *catalog.Server) any {
	sum := Summarize(s, time.Time{})
	sum.State, sum.BadgeText = "", ""
	b, err := canon.MarshalPlain(sum)
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
	msg, state := BadgeState(s, now)
	b = append(append(b, e.head...), `,"state":`...)
	b = appendJSONString(b, state)
	b = appendJSONString(append(b, `,"badgeText":`...), msg)
	return append(b, e.tail...), nil
}

// appendJSONString writes s as canon.MarshalPlain does. The badge texts
// and states it is given need no escapes, so they are copied; anything
// else takes encoding/json's own path.
func appendJSONString(b []byte, s string) []byte {
	if plainJSON(s) {
		return append(append(append(b, '"'), s...), '"')
	}
	enc, err := canon.MarshalPlain(s) // a string always encodes
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
