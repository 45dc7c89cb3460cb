package views

import (
	"bytes"
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/histor-observer/histor/crawl/state"
	"github.com/histor-observer/histor/internal/feedtext"
	"github.com/histor-observer/histor/node/catalog"
)

// FeedEntries bounds /feed.xml: HISTOR's latest 50 changes.
const FeedEntries = 50

// Peers is the peer view as the views read it: what the federation's
// observers hold of each server.
type Peers interface {
	// Members is the observers and agreement members of server id, as
	// /check carries them.
	Members(id string) (observers []any, agreement map[string]any, err error)
	// SplitServers is the server ids in a split view, sorted.
	SplitServers() []string
	// Split is what the observers of server id hold.
	Split(id string) (Split, error)
}

// Split is one server's split view, counted.
type Split struct {
	Observers int    // how many observers hold a tool set of it
	Digests   int    // how many different tool sets they hold
	Since     string // the latest observedAt among them: when the split was last confirmed
}

// SplitEntry is a server whose observers are in a split view, for the
// feed: they hold different tool sets of it at one time.
type SplitEntry struct {
	ID, Name, Endpoint string
	Split
}

// FeedSplits lists the servers of c in a split view (of watch, when
// given), at most FeedEntries. A split is the peer view's present state, so
// an entry stays while the split lasts and goes when the observers agree.
// A server whose split does not read is reported to skipped and left out.
func FeedSplits(c *catalog.Catalog, p Peers, watch []string, skipped func(id string, err error)) []SplitEntry {
	if p == nil {
		return nil
	}
	var out []SplitEntry
	for _, id := range p.SplitServers() {
		srv := c.ByID(id)
		if srv == nil || (watch != nil && !slices.Contains(watch, id)) || len(out) == FeedEntries {
			continue
		}
		sp, err := p.Split(id)
		if err != nil {
			skipped(id, err)
			continue
		}
		out = append(out, SplitEntry{ID: id, Name: srv.Name, Endpoint: srv.Endpoint, Split: sp})
	}
	return out
}

// RenderFeed writes /feed.xml with links under base: the split views first
// (the present state of the peer view), then the changes cs, newest first;
// now dates a feed with neither.
func RenderFeed(c *catalog.Catalog, base string, splits []SplitEntry, cs []state.Change, now time.Time) []byte {
	latest := ""
	if len(cs) > 0 {
		latest = catalog.FormatTime(cs[0].At)
	}
	for _, e := range splits {
		latest = max(latest, e.Since) // one layout, so text order is time order
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
		writeEntry(&b, base, ToChangeRow(c, &cs[i]))
	}
	b.WriteString(`</feed>`)
	return b.Bytes()
}

// writeSplitEntry writes one split view: what the observers hold, no more.
func writeSplitEntry(b *bytes.Buffer, base string, e SplitEntry) {
	b.WriteString(`<entry>`)
	fmt.Fprintf(b, `<id>%s/api/v1/servers/%s#split-%s</id>`, feedtext.XMLText(base), feedtext.XMLText(e.ID), feedtext.XMLText(e.Since))
	fmt.Fprintf(b, `<title>%s: observers saw different tool definitions</title>`, feedtext.XMLText(e.Name))
	fmt.Fprintf(b, `<updated>%s</updated>`, feedtext.XMLText(e.Since))
	fmt.Fprintf(b, `<link href="%s/api/v1/servers/%s"/>`, feedtext.XMLText(base), feedtext.XMLText(e.ID))
	fmt.Fprintf(b, `<summary>%d observers hold %d different tool sets of this endpoint at once — %s</summary>`,
		e.Observers, e.Digests, feedtext.XMLText(e.Endpoint))
	b.WriteString(`</entry>`)
}

// writeEntry writes one change as HISTOR's feed does: the server's name,
// what changed in a line, and its endpoint. Links point at this node's API.
func writeEntry(b *bytes.Buffer, base string, row ChangeRow) {
	b.WriteString(`<entry>`)
	fmt.Fprintf(b, `<id>%s/api/v1/changes/%d</id>`, feedtext.XMLText(base), row.ID)
	fmt.Fprintf(b, `<title>%s: tool definitions changed</title>`, feedtext.XMLText(row.Name))
	fmt.Fprintf(b, `<updated>%s</updated>`, row.ObservedAt)
	fmt.Fprintf(b, `<link href="%s/api/v1/servers/%s"/>`, feedtext.XMLText(base), feedtext.XMLText(row.TargetID))
	fmt.Fprintf(b, `<summary>%s — %s</summary>`, feedtext.XMLText(feedtext.SummaryLine(row.Summary)), feedtext.XMLText(row.Endpoint))
	b.WriteString(`</entry>`)
}
