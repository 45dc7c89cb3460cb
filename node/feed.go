package node

import (
	"bytes"
	"cmp"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/histor-observer/histor/crawl/state"
	"github.com/histor-observer/histor/internal/httpx"
	"github.com/histor-observer/histor/node/catalog"
)

// Bounds of /feed.xml.
const (
	feedEntries   = 50  // HISTOR's: the latest 50 changes
	maxWatchIDs   = 100 // ids one ?watch= may name
	feedListNames = 10  // names listed per kind in an entry's summary, HISTOR's
)

// serveFeed answers /feed.xml: an Atom feed of the latest changes, or with
// ?watch=id,… of the latest changes of those servers.
func (a *api) serveFeed(w http.ResponseWriter, r *http.Request) {
	rd := a.reader(w)
	if rd == nil {
		return
	}
	watch, err := watchIDs(r.URL.RawQuery)
	if err != nil {
		a.fail(w, http.StatusBadRequest, err.Error())
		return
	}
	var cs []state.Change
	if watch != nil {
		cs, err = rd.Catalog.ChangesOf(watch, feedEntries)
	} else {
		cs, err = rd.Catalog.Changes(0, feedEntries)
	}
	if err != nil {
		a.internal(w, r, "listing changes", err)
		return
	}
	base := rd.PublicBase
	if base == "" {
		base = "http://" + r.Host
	}
	splits := a.splitEntries(rd.Catalog, watch)
	writeBody(w, "application/atom+xml", renderFeed(rd.Catalog, strings.TrimSuffix(base, "/"), splits, cs, rd.now()))
}

// splitEntry is a server whose observers are in a split view, for the
// feed: they hold different tool sets of it at one time.
type splitEntry struct {
	id, name, endpoint string
	observers, digests int
	since              string // the latest observedAt among them: when the split was last confirmed
}

// splitEntries lists the servers in a split view (of watch, when given),
// at most feedEntries. A split is the peer view's present state, so an
// entry stays while the split lasts and goes when the observers agree.
func (a *api) splitEntries(c *catalog.Catalog, watch []string) []splitEntry {
	if a.fed == nil {
		return nil
	}
	s := a.fed.peers.Load()
	if s == nil {
		return nil
	}
	var out []splitEntry
	for _, id := range s.SplitServers() {
		srv := c.ByID(id)
		if srv == nil || (watch != nil && !slices.Contains(watch, id)) || len(out) == feedEntries {
			continue
		}
		obs, err := s.Observers(id)
		if err != nil {
			a.logger.Error("reading the peer view for the feed", "server", id, "err", err)
			continue
		}
		e := splitEntry{id: id, name: srv.Name, endpoint: srv.Endpoint, observers: len(obs), digests: s.Agreement(id).Counts.Digests}
		for _, o := range obs {
			e.since = max(e.since, o.ObservedAt)
		}
		out = append(out, e)
	}
	return out
}

// writeSplitEntry writes one split view: what the observers hold, no more.
func writeSplitEntry(b *bytes.Buffer, base string, e splitEntry) {
	b.WriteString(`<entry>`)
	fmt.Fprintf(b, `<id>%s/api/v1/servers/%s#split-%s</id>`, xmlText(base), xmlText(e.id), xmlText(e.since))
	fmt.Fprintf(b, `<title>%s: observers saw different tool definitions</title>`, xmlText(e.name))
	fmt.Fprintf(b, `<updated>%s</updated>`, xmlText(e.since))
	fmt.Fprintf(b, `<link href="%s/api/v1/servers/%s"/>`, xmlText(base), xmlText(e.id))
	fmt.Fprintf(b, `<summary>%d observers hold %d different tool sets of this endpoint at once — %s</summary>`,
		e.observers, e.digests, xmlText(e.endpoint))
	b.WriteString(`</entry>`)
}

// watchIDs reads ?watch=id,id,…: server ids (16 lowercase hex
// characters), at most maxWatchIDs. nil when absent.
func watchIDs(raw string) ([]string, error) {
	p := httpx.String{Name: "watch"}
	if err := httpx.ReadStrings(raw, &p); err != nil || !p.Present {
		return nil, err
	}
	ids := strings.Split(p.Value, ",")
	if len(ids) > maxWatchIDs {
		return nil, &httpx.ParamError{Name: "watch", Why: fmt.Sprintf("names more than %d servers", maxWatchIDs)}
	}
	for _, id := range ids {
		if !isServerID(id) {
			return nil, &httpx.ParamError{Name: "watch", Why: "must be server ids (16 lowercase hex characters) separated by commas"}
		}
	}
	return ids, nil
}

func isServerID(s string) bool {
	if len(s) != 16 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// renderFeed writes the split views first (the present state of the peer
// view), then the changes, newest first.
func renderFeed(c *catalog.Catalog, base string, splits []splitEntry, cs []state.Change, now time.Time) []byte {
	latest := ""
	if len(cs) > 0 {
		latest = catalog.FormatTime(cs[0].At)
	}
	for _, e := range splits {
		latest = max(latest, e.since) // one layout, so text order is time order
	}
	updated := cmp.Or(latest, catalog.FormatTime(now))
	var b bytes.Buffer
	b.WriteString(`<?xml version="1.0" encoding="utf-8"?><feed xmlns="http://www.w3.org/2005/Atom">`)
	fmt.Fprintf(&b, `<id>%s/feed.xml</id><title>histor — MCP tool-definition changes</title>`, xmlText(base))
	fmt.Fprintf(&b, `<updated>%s</updated><author><name>histor</name></author>`, updated)
	fmt.Fprintf(&b, `<link rel="self" href="%s/feed.xml"/>`, xmlText(base))
	for _, e := range splits {
		writeSplitEntry(&b, base, e)
	}
	for i := range cs {
		writeEntry(&b, base, toChangeRow(c, &cs[i]))
	}
	b.WriteString(`</feed>`)
	return b.Bytes()
}

// writeEntry writes one change as HISTOR's feed does: the server's name,
// what changed in a line, and its endpoint. Links point at this node's API.
func writeEntry(b *bytes.Buffer, base string, row changeRow) {
	b.WriteString(`<entry>`)
	fmt.Fprintf(b, `<id>%s/api/v1/changes/%d</id>`, xmlText(base), row.ID)
	fmt.Fprintf(b, `<title>%s: tool definitions changed</title>`, xmlText(row.Name))
	fmt.Fprintf(b, `<updated>%s</updated>`, row.ObservedAt)
	fmt.Fprintf(b, `<link href="%s/api/v1/servers/%s"/>`, xmlText(base), xmlText(row.TargetID))
	fmt.Fprintf(b, `<summary>%s — %s</summary>`, xmlText(summaryLine(row.Summary)), xmlText(row.Endpoint))
	b.WriteString(`</entry>`)
}

// feedSummary is what an entry reads of a change summary.
type feedSummary struct {
	Added        []string                `json:"added"`
	Removed      []string                `json:"removed"`
	Modified     []struct{ Tool string } `json:"modified"`
	NewAddresses []string                `json:"newAddresses"`
	NewTotal     *int                    `json:"newAddressesTotal"`
}

// summaryLine is HISTOR's one-line account of a change.
func summaryLine(raw json.RawMessage) string {
	var s feedSummary
	if json.Unmarshal(raw, &s) != nil {
		return "definitions changed"
	}
	var parts []string
	if len(s.NewAddresses) > 0 {
		total := len(s.NewAddresses)
		if s.NewTotal != nil {
			total = *s.NewTotal
		}
		more := ""
		if total > feedListNames {
			more = fmt.Sprintf(" (+%d more)", total-feedListNames)
		}
		parts = append(parts, "NEW OUTSIDE ADDRESSES: "+strings.Join(head(s.NewAddresses), ", ")+more)
	}
	if len(s.Added) > 0 {
		parts = append(parts, "added: "+strings.Join(head(s.Added), ", "))
	}
	if len(s.Removed) > 0 {
		parts = append(parts, "removed: "+strings.Join(head(s.Removed), ", "))
	}
	if len(s.Modified) > 0 {
		tools := make([]string, 0, len(s.Modified))
		for _, m := range s.Modified {
			tools = append(tools, m.Tool)
		}
		parts = append(parts, "modified: "+strings.Join(head(tools), ", "))
	}
	if len(parts) == 0 {
		return "definitions changed"
	}
	return strings.Join(parts, "; ")
}

func head(s []string) []string { return s[:min(len(s), feedListNames)] }

// xmlText escapes s for XML text or an attribute, dropping the characters
// XML 1.0 cannot carry at all (a tool name may hold them), as HISTOR does.
func xmlText(s string) string {
	s = strings.Map(func(r rune) rune {
		if r == '\t' || r == '\n' || r == '\r' || r >= 0x20 && r <= 0xD7FF ||
			r >= 0xE000 && r <= 0xFFFD || r >= 0x10000 && r <= 0x10FFFF {
			return r
		}
		return -1
	}, s)
	var b strings.Builder
	xml.EscapeText(&b, []byte(s))
	return b.String()
}
