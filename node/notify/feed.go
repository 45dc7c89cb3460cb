package notify

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/histor-observer/histor/internal/feedtext"
	"github.com/histor-observer/histor/node/events"
)

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

// renderSecurityFeed writes the Atom feed of items, newest first; now is
// its updated time when it holds none.
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
	x := feedtext.XMLText
	var b bytes.Buffer
	b.WriteString(`<?xml version="1.0" encoding="utf-8"?><feed xmlns="http://www.w3.org/2005/Atom">`)
	fmt.Fprintf(&b, `<id>%s/security-feed.xml</id><title>histor — security events</title>`, x(base))
	fmt.Fprintf(&b, `<updated>%s</updated><author><name>histor</name></author>`, x(updated))
	fmt.Fprintf(&b, `<link rel="self" href="%s/security-feed.xml"/>`, x(base))
	b.Write(entries.Bytes())
	b.WriteString(`</feed>`)
	return b.Bytes()
}

// writeEventEntry writes one event: what happened in the title, in words
// that say what was observed and nothing of the server's worth.
func writeEventEntry(b *bytes.Buffer, base string, cursor uint64, e *feedEvent) {
	x := feedtext.XMLText
	title, summary := eventWords(e)
	b.WriteString(`<entry>`)
	fmt.Fprintf(b, `<id>%s/api/v1/security-events?after=%d#%s</id>`, x(base), cursor-1, x(e.ID))
	fmt.Fprintf(b, `<title>%s</title>`, x(title))
	fmt.Fprintf(b, `<updated>%s</updated>`, x(e.ObservedAt))
	if e.Evidence.URL != "" {
		fmt.Fprintf(b, `<link href="%s%s"/>`, x(base), x(e.Evidence.URL))
	}
	fmt.Fprintf(b, `<summary>%s</summary>`, x(summary))
	b.WriteString(`</entry>`)
}

func eventWords(e *feedEvent) (title, summary string) {
	switch e.Kind {
	case events.KindDefinitions:
		return e.Evidence.Name + ": tool definitions changed", feedtext.SummaryLine(e.Evidence.Summary) + " — " + e.Evidence.Endpoint
	case events.KindSplitView:
		return e.Target + ": observers saw different tool definitions",
			fmt.Sprintf("observers hold %d different tool sets of this endpoint at once — %s", e.Evidence.Digests, e.Evidence.Endpoint)
	case events.KindEquivocation:
		return e.Target + ": two log heads that cannot be one tree", "equivocation evidence (" + e.Evidence.Kind + ") held by this node"
	}
	return e.Target + ": " + e.Kind, e.Kind
}
