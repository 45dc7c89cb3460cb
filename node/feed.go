package node

import (
	"bytes"
	"cmp"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/histor-observer/histor/crawl/state"
	"github.com/histor-observer/histor/internal/feedtext"
	"github.com/histor-observer/histor/node/catalog"
)

// feedEntries bounds /feed.xml: HISTOR's latest 50 changes.
const feedEntries = 50

// serveFeed answers /feed.xml: an Atom feed of the latest changes, or with
// ?watch=id,… of the latest changes of those servers.
func (a *api) serveFeed(w http.ResponseWriter, r *http.Request) {
	rd := a.reader(w)
	if rd == nil {
		return
	}
	watch, err := feedtext.WatchIDs(r.URL.RawQuery)
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
	fmt.Fprintf(b, `<id>%s/api/v1/servers/%s#split-%s</id>`, feedtext.XMLText(base), feedtext.XMLText(e.id), feedtext.XMLText(e.since))
	fmt.Fprintf(b, `<title>%s: observers saw different tool definitions</title>`, feedtext.XMLText(e.name))
	fmt.Fprintf(b, `<updated>%s</updated>`, feedtext.XMLText(e.since))
	fmt.Fprintf(b, `<link href="%s/api/v1/servers/%s"/>`, feedtext.XMLText(base), feedtext.XMLText(e.id))
	fmt.Fprintf(b, `<summary>%d observers hold %d different tool sets of this endpoint at once — %s</summary>`,
		e.observers, e.digests, feedtext.XMLText(e.endpoint))
	b.WriteString(`</entry>`)
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
	fmt.Fprintf(&b, `<id>%s/feed.xml</id><title>histor — MCP tool-definition changes</title>`, feedtext.XMLText(base))
	fmt.Fprintf(&b, `<updated>%s</updated><author><name>histor</name></author>`, updated)
	fmt.Fprintf(&b, `<link rel="self" href="%s/feed.xml"/>`, feedtext.XMLText(base))
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
	fmt.Fprintf(b, `<id>%s/api/v1/changes/%d</id>`, feedtext.XMLText(base), row.ID)
	fmt.Fprintf(b, `<title>%s: tool definitions changed</title>`, feedtext.XMLText(row.Name))
	fmt.Fprintf(b, `<updated>%s</updated>`, row.ObservedAt)
	fmt.Fprintf(b, `<link href="%s/api/v1/servers/%s"/>`, feedtext.XMLText(base), feedtext.XMLText(row.TargetID))
	fmt.Fprintf(b, `<summary>%s — %s</summary>`, feedtext.XMLText(feedtext.SummaryLine(row.Summary)), feedtext.XMLText(row.Endpoint))
	b.WriteString(`</entry>`)
}
