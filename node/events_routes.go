package node

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/histor-observer/histor/internal/httpx"
	"github.com/histor-observer/histor/node/catalog"
	"github.com/histor-observer/histor/node/events"
)

// securityFeedEntries bounds /security-feed.xml: the newest events only;
// /api/v1/security-events is the lossless way to read them all.
const securityFeedEntries = 50

// eventsPage is the /api/v1/security-events answer: the events after the
// cursor asked for, oldest first, and the cursor to ask after next (the
// last one given, or the one asked after when none is new). A consumer
// persists nextCursor only once it has processed the page.
type eventsPage struct {
	Events     []events.Item `json:"events"`
	NextCursor uint64        `json:"nextCursor"`
}

// serveSecurityEvents answers /api/v1/security-events?after=&limit=&watch=.
func (a *api) serveSecurityEvents(w http.ResponseWriter, r *http.Request) {
	if a.events == nil {
		a.fail(w, http.StatusServiceUnavailable, "no security events")
		return
	}
	after, limit := httpx.Uint{Name: "after"}, httpx.Uint{Name: "limit"}
	if err := httpx.ReadUints(r.URL.RawQuery, &after, &limit); err != nil {
		a.fail(w, http.StatusBadRequest, err.Error())
		return
	}
	if !limit.Present {
		limit.Value = events.DefaultLimit
	}
	if limit.Value < 1 || limit.Value > events.MaxLimit {
		a.fail(w, http.StatusBadRequest, fmt.Sprintf("limit must be between 1 and %d", events.MaxLimit))
		return
	}
	watch, err := watchIDs(r.URL.RawQuery)
	if err != nil {
		a.fail(w, http.StatusBadRequest, err.Error())
		return
	}
	items, err := a.events.store.Page(after.Value, int(limit.Value), watch)
	if err != nil {
		a.internal(w, r, "listing security events", err)
		return
	}
	page := eventsPage{Events: items, NextCursor: after.Value}
	if len(items) > 0 {
		page.NextCursor = items[len(items)-1].Cursor
	}
	w.Header().Set("Cache-Control", "no-cache")
	a.writeJSON(w, r, page)
}

// serveSecurityFeed answers /security-feed.xml?watch=: an Atom feed of the
// newest security events, in /feed.xml's layout.
func (a *api) serveSecurityFeed(w http.ResponseWriter, r *http.Request) {
	if a.events == nil {
		a.fail(w, http.StatusServiceUnavailable, "no security events")
		return
	}
	watch, err := watchIDs(r.URL.RawQuery)
	if err != nil {
		a.fail(w, http.StatusBadRequest, err.Error())
		return
	}
	items, err := a.events.store.Newest(securityFeedEntries, watch)
	if err != nil {
		a.internal(w, r, "listing security events", err)
		return
	}
	base := ""
	if rd := a.read.Load(); rd != nil {
		base = rd.PublicBase
	}
	if base == "" {
		base = "http://" + r.Host
	}
	writeBody(w, "application/atom+xml", renderSecurityFeed(strings.TrimSuffix(base, "/"), items, a.nowFeed()))
}

// nowFeed is the feed's updated time when it holds no event.
func (a *api) nowFeed() string {
	if rd := a.read.Load(); rd != nil {
		return catalog.FormatTime(rd.now())
	}
	return ""
}

// feedEvent is what an entry reads of an event.
type feedEvent struct {
	ID         string `json:"id"`
	Target     string `json:"target"`
	Kind       string `json:"kind"`
	ObservedAt string `json:"observedAt"`
	Evidence   struct {
		Name     string `json:"name"`
		Endpoint string `json:"endpoint"`
		Digests  int    `json:"digests"`
		Kind     string `json:"kind"`
		URL      string `json:"url"`
		Summary  json.RawMessage
	} `json:"evidence"`
}

func renderSecurityFeed(base string, items []events.Item, now string) []byte {
	updated := now
	var entries bytes.Buffer
	for i, it := range items {
		var e feedEvent
		if json.Unmarshal(it.Event, &e) != nil {
			continue
		}
		if i == 0 {
			updated = e.ObservedAt
		}
		writeEventEntry(&entries, base, it.Cursor, &e)
	}
	var b bytes.Buffer
	b.WriteString(`<?xml version="1.0" encoding="utf-8"?><feed xmlns="http://www.w3.org/2005/Atom">`)
	fmt.Fprintf(&b, `<id>%s/security-feed.xml</id><title>histor — security events</title>`, xmlText(base))
	fmt.Fprintf(&b, `<updated>%s</updated><author><name>histor</name></author>`, xmlText(updated))
	fmt.Fprintf(&b, `<link rel="self" href="%s/security-feed.xml"/>`, xmlText(base))
	b.Write(entries.Bytes())
	b.WriteString(`</feed>`)
	return b.Bytes()
}

// writeEventEntry writes one event: what happened in the title, in words
// that say what was observed and nothing of the server's worth.
func writeEventEntry(b *bytes.Buffer, base string, cursor uint64, e *feedEvent) {
	title, summary := eventWords(e)
	b.WriteString(`<entry>`)
	fmt.Fprintf(b, `<id>%s/api/v1/security-events?after=%d#%s</id>`, xmlText(base), cursor-1, xmlText(e.ID))
	fmt.Fprintf(b, `<title>%s</title>`, xmlText(title))
	fmt.Fprintf(b, `<updated>%s</updated>`, xmlText(e.ObservedAt))
	if e.Evidence.URL != "" {
		fmt.Fprintf(b, `<link href="%s%s"/>`, xmlText(base), xmlText(e.Evidence.URL))
	}
	fmt.Fprintf(b, `<summary>%s</summary>`, xmlText(summary))
	b.WriteString(`</entry>`)
}

func eventWords(e *feedEvent) (title, summary string) {
	switch e.Kind {
	case events.KindDefinitions:
		return e.Evidence.Name + ": tool definitions changed", summaryLine(e.Evidence.Summary) + " — " + e.Evidence.Endpoint
	case events.KindSplitView:
		return e.Target + ": observers saw different tool definitions",
			fmt.Sprintf("observers hold %d different tool sets of this endpoint at once — %s", e.Evidence.Digests, e.Evidence.Endpoint)
	case events.KindEquivocation:
		return e.Target + ": two log heads that cannot be one tree", "equivocation evidence (" + e.Evidence.Kind + ") held by this node"
	}
	return e.Target + ": " + e.Kind, e.Kind
}
