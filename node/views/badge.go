package views

import (
	"fmt"
	"html"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	hlog "github.com/histor-observer/histor/log"
	"github.com/histor-observer/histor/node/catalog"
)

// Badge colours, HISTOR's (MTL/1 §9.3): a change is amber, a neutral
// colour, never red: a change is not an accusation.
const (
	ColorUnchanged = "#2f9e77"
	ColorPinned    = "#3a7bd5"
	ColorChanged   = "#c98a1b" // amber
	ColorUnknown   = "#6b7280"
)

// changedDays is how many days a change shows as "changed ‹date›".
const changedDays = 7

var badgeColors = map[string]string{
	"unchanged": ColorUnchanged, "pinned": ColorPinned, "changed": ColorChanged, "unknown": ColorUnknown,
}

// BadgeColor is the colour of a badge in state (one BadgeState gives).
func BadgeColor(state string) string { return badgeColors[state] }

// BadgeState is HISTOR's badge_state: the message and state of s's badge
// (s nil: not listed). Every message carries a date or says why it has none.
func BadgeState(s *catalog.Server, now time.Time) (message, state string) {
	if s == nil {
		return "not listed", "unknown"
	}
	o := &s.Obs
	if o.ToolSetDigest == "" {
		// A names-only record cannot back "unchanged": a badge only ever
		// speaks for what a digest can show.
		if o.Subject != "" {
			return "not digestible", "unknown"
		}
		return "not observed", "unknown"
	}
	if s.ChangeCount > 0 && !o.UnchangedSince.IsZero() && daysSince(o.UnchangedSince, now) < changedDays {
		return "changed " + catalog.FormatTime(o.UnchangedSince)[:10], "changed"
	}
	if o.OKObservations <= 1 {
		return "pinned " + prefix(catalog.FormatTime(o.FirstPinned), 10), "pinned"
	}
	lastOK := catalog.FormatTime(o.LastOK)
	md := ""
	if len(lastOK) >= 10 {
		md = lastOK[5:10]
	}
	return fmt.Sprintf("unchanged %dd · %s", daysSince(o.UnchangedSince, now), md), "unchanged"
}

// daysSince counts whole days from t to now, never below 0.
func daysSince(t, now time.Time) int {
	if t.IsZero() || !now.After(t) {
		return 0
	}
	return int(now.Sub(t) / (24 * time.Hour))
}

func prefix(s string, n int) string { return s[:min(len(s), n)] }

// BadgeLabel is the left half of every SVG badge; it names the issuer
// (MTL/1 §9.1: never a bare glyph).
const BadgeLabel = "MCP tool defs · histor"

// badgeWidth is the shields.io approximation of Verdana 11px text.
func badgeWidth(text string) int { return int(float64(utf8.RuneCountInString(text))*6.4) + 12 }

// RenderBadge is the SVG badge of label and message on color.
func RenderBadge(label, message, color string) []byte {
	lw, mw := badgeWidth(label), badgeWidth(message)
	total := lw + mw
	title := html.EscapeString(label + ": " + message)
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="20" role="img" aria-label="%s">`, total, title)
	fmt.Fprintf(&b, `<title>%s</title>`, title)
	b.WriteString(`<linearGradient id="s" x2="0" y2="100%"><stop offset="0" stop-color="#bbb" stop-opacity=".1"/>`)
	b.WriteString(`<stop offset="1" stop-opacity=".1"/></linearGradient>`)
	fmt.Fprintf(&b, `<clipPath id="r"><rect width="%d" height="20" rx="3" fill="#fff"/></clipPath>`, total)
	fmt.Fprintf(&b, `<g clip-path="url(#r)"><rect width="%d" height="20" fill="#1f2530"/>`, lw)
	fmt.Fprintf(&b, `<rect x="%d" width="%d" height="20" fill="%s"/>`, lw, mw, color)
	fmt.Fprintf(&b, `<rect width="%d" height="20" fill="url(#s)"/></g>`, total)
	b.WriteString(`<g fill="#fff" text-anchor="middle" font-family="Verdana,Geneva,DejaVu Sans,sans-serif" font-size="11">`)
	fmt.Fprintf(&b, `<text x="%.1f" y="14">%s</text>`, float64(lw)/2, html.EscapeString(label))
	fmt.Fprintf(&b, `<text x="%.1f" y="14">%s</text></g></svg>`, float64(lw)+float64(mw)/2, html.EscapeString(message))
	return []byte(b.String())
}

// ServerBadge is the SVG badge of s (nil: not listed) as of now.
func ServerBadge(s *catalog.Server, now time.Time) []byte {
	msg, state := BadgeState(s, now)
	return RenderBadge(BadgeLabel, msg, BadgeColor(state))
}

// Shield is a shields.io endpoint badge.
type Shield struct {
	SchemaVersion int    `json:"schemaVersion"`
	Label         string `json:"label"`
	Message       string `json:"message"`
	Color         string `json:"color"`
}

// ShieldInputs is what the shields read besides the catalog: the log's
// latest head and the crawl's interval (0: the node does not crawl).
type ShieldInputs struct {
	Head          hlog.Head
	CrawlInterval time.Duration
	Now           time.Time
}

// NamedShield is the shield called name (log, pinned, changes or sth);
// ok is false for any other name.
func NamedShield(name string, c *catalog.Catalog, in ShieldInputs) (sh Shield, ok bool) {
	switch name {
	case "log":
		return Shield{1, "labels in log", Thousands(in.Head.Size), "5fe3ff"}, true
	case "pinned":
		return Shield{1, "tool sets pinned", Thousands(uint64(c.Counts().Pinned)), "3a7bd5"}, true
	case "changes":
		return Shield{1, "changes · 7d", Thousands(uint64(c.ChangesSince(in.Now.Add(-7 * 24 * time.Hour)))), "c98a1b"}, true
	case "sth":
		return sthShield(in), true
	}
	return Shield{}, false
}

// sthShield ages the latest head; one older than two crawl intervals means
// the crawler stopped, and the colour says so (amber, not red).
func sthShield(in ShieldInputs) Shield {
	head, now := in.Head, in.Now
	if head.Size == 0 { // a size-0 head is not served (/api/v1/log/sth answers 404)
		return Shield{1, "signed tree head", "none yet", "6b7280"}
	}
	hours := now.Sub(head.Time).Hours()
	age := fmt.Sprintf("%.0fh ago", hours)
	if hours >= 48 {
		age = fmt.Sprintf("%.0fd ago", hours/24)
	}
	color := "2f9e77"
	if in.CrawlInterval > 0 && now.Sub(head.Time) > 2*in.CrawlInterval {
		color = "c98a1b"
	}
	return Shield{1, "signed tree head", age, color}
}

// Thousands writes n with commas, as Python's "{:,}" does.
func Thousands(n uint64) string {
	s := strconv.FormatUint(n, 10)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}
