package node

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/histor-observer/histor/crawl/state"
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
	writeBody(w, "application/atom+xml", renderFeed(rd.Catalog, strings.TrimSuffix(base, "/"), cs, rd.now()))
}

// watchIDs reads ?watch=id,id,…: server ids (16 lowercase hex
// characters), at most maxWatchIDs. nil when absent.
func watchIDs(raw string) ([]string, error) {
	p := strParam{name: "watch"}
	if err := readStrings(raw, &p); err != nil || !p.present {
		return nil, err
	}
	ids := strings.Split(p.value, ",")
	if len(ids) > maxWatchIDs {
		return nil, &paramError{"watch", fmt.Sprintf("names more than %d servers", maxWatchIDs)}
	}
	for _, id := range ids {
		if !isServerID(id) {
			return nil, &paramError{"watch", "must be server ids (16 lowercase hex characters) separated by commas"}
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

func renderFeed(c *catalog.Catalog, base string, cs []state.Change, now time.Time) []byte {
	updated := catalog.FormatTime(now)
	if len(cs) > 0 {
		updated = catalog.FormatTime(cs[0].At)
	}
	var b bytes.Buffer
	b.WriteString(`<?xml version="1.0" encoding="utf-8"?><feed xmlns="http://www.w3.org/2005/Atom">`)
	fmt.Fprintf(&b, `<id>%s/feed.xml</id><title>histor — MCP tool-definition changes</title>`, xmlText(base))
	fmt.Fprintf(&b, `<updated>%s</updated><author><name>histor</name></author>`, updated)
	fmt.Fprintf(&b, `<link rel="self" href="%s/feed.xml"/>`, xmlText(base))
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
