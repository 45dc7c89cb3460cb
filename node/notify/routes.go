package notify

import (
	"fmt"
	"log/slog"
	"net/http"
	"strings"

	"github.com/histor-observer/histor/internal/feedtext"
	"github.com/histor-observer/histor/internal/httpx"
	"github.com/histor-observer/histor/node/events"
	"github.com/histor-observer/histor/node/webhook"
)

// Bounds of the routes.
const (
	// securityFeedEntries bounds /security-feed.xml: the newest events only;
	// /api/v1/security-events is the lossless way to read them all.
	securityFeedEntries = 50
	defaultWebhookLog   = 100
	maxWebhookLog       = webhook.LogRecords
)

// Mount is what the part's routes read of the node, at every request: the
// routes are made before the parts open and answer for as long as the node
// serves.
type Mount struct {
	// Part is the open part; nil (or a nil Part) answers 503.
	Part func() *Part
	// Webhooks is the open deliverer; nil without subscriptions.
	Webhooks func() *Webhooks
	// PublicBase is the node's public URL; empty: the request's host.
	PublicBase func() string
	// FeedTime is the feed's updated time when it holds no event.
	FeedTime func() string
	// Authorize checks the operator's token, answering the refusal itself
	// when it reports false.
	Authorize func(w http.ResponseWriter, r *http.Request) bool
	Logger    *slog.Logger
}

// Routes are the part's routes, in the order the node lists them.
func Routes(m Mount) []httpx.Route {
	return []httpx.Route{
		{Pattern: "/api/v1/security-events", Methods: httpx.GetOnly, Handler: http.HandlerFunc(m.serveSecurityEvents)},
		{Pattern: "/security-feed.xml", Methods: httpx.GetOnly, Handler: http.HandlerFunc(m.serveSecurityFeed)},
		{Pattern: "/api/v1/admin/webhooks", Methods: httpx.GetOnly, Handler: http.HandlerFunc(m.serveWebhookLog)},
	}
}

// part is the open part, or nil.
func (m Mount) part() *Part {
	if m.Part == nil {
		return nil
	}
	return m.Part()
}

// authorize is Authorize; without one no operator route answers.
func (m Mount) authorize(w http.ResponseWriter, r *http.Request) bool {
	if m.Authorize == nil {
		httpx.WriteDetail(w, http.StatusServiceUnavailable, "operator token not configured")
		return false
	}
	return m.Authorize(w, r)
}

// EventsPage is the /api/v1/security-events answer: the events after the
// cursor asked for, oldest first, and the cursor to ask after next (the
// last one given, or the one asked after when none is new). A consumer
// persists nextCursor only once it has processed the page.
type EventsPage struct {
	Events     []events.Item `json:"events"`
	NextCursor uint64        `json:"nextCursor"`
}

// serveSecurityEvents answers /api/v1/security-events?after=&limit=&watch=.
func (m Mount) serveSecurityEvents(w http.ResponseWriter, r *http.Request) {
	p := m.part()
	if p == nil {
		httpx.WriteDetail(w, http.StatusServiceUnavailable, "no security events")
		return
	}
	after, limit := httpx.Uint{Name: "after"}, httpx.Uint{Name: "limit"}
	if err := httpx.ReadUints(r.URL.RawQuery, &after, &limit); err != nil {
		httpx.WriteDetail(w, http.StatusBadRequest, err.Error())
		return
	}
	if !limit.Present {
		limit.Value = events.DefaultLimit
	}
	if limit.Value < 1 || limit.Value > events.MaxLimit {
		httpx.WriteDetail(w, http.StatusBadRequest, fmt.Sprintf("limit must be between 1 and %d", events.MaxLimit))
		return
	}
	watch, err := feedtext.WatchIDs(r.URL.RawQuery)
	if err != nil {
		httpx.WriteDetail(w, http.StatusBadRequest, err.Error())
		return
	}
	items, err := p.store.Page(after.Value, int(limit.Value), watch)
	if err != nil {
		httpx.Internal(w, r, m.Logger, "listing security events", err)
		return
	}
	page := EventsPage{Events: items, NextCursor: after.Value}
	if len(items) > 0 {
		page.NextCursor = items[len(items)-1].Cursor
	}
	w.Header().Set("Cache-Control", "no-cache")
	httpx.WriteJSON(w, r, m.Logger, page)
}

// serveSecurityFeed answers /security-feed.xml?watch=: an Atom feed of the
// newest security events, in /feed.xml's layout.
func (m Mount) serveSecurityFeed(w http.ResponseWriter, r *http.Request) {
	p := m.part()
	if p == nil {
		httpx.WriteDetail(w, http.StatusServiceUnavailable, "no security events")
		return
	}
	watch, err := feedtext.WatchIDs(r.URL.RawQuery)
	if err != nil {
		httpx.WriteDetail(w, http.StatusBadRequest, err.Error())
		return
	}
	items, err := p.store.Newest(securityFeedEntries, watch)
	if err != nil {
		httpx.Internal(w, r, m.Logger, "listing security events", err)
		return
	}
	base := ""
	if m.PublicBase != nil {
		base = m.PublicBase()
	}
	if base == "" {
		base = "http://" + r.Host
	}
	now := ""
	if m.FeedTime != nil {
		now = m.FeedTime()
	}
	httpx.WriteBody(w, "application/atom+xml", renderSecurityFeed(strings.TrimSuffix(base, "/"), items, now))
}

// serveWebhookLog answers GET /api/v1/admin/webhooks?limit= for the
// operator: each subscription's place (cursor, failed attempts, next
// attempt, events pending) and its newest delivery records.
func (m Mount) serveWebhookLog(w http.ResponseWriter, r *http.Request) {
	if !m.authorize(w, r) {
		return
	}
	limit := httpx.Uint{Name: "limit"}
	if err := httpx.ReadUints(r.URL.RawQuery, &limit); err != nil {
		httpx.WriteDetail(w, http.StatusBadRequest, err.Error())
		return
	}
	if !limit.Present {
		limit.Value = defaultWebhookLog
	}
	if limit.Value < 1 || limit.Value > maxWebhookLog {
		httpx.WriteDetail(w, http.StatusBadRequest, fmt.Sprintf("limit must be between 1 and %d", maxWebhookLog))
		return
	}
	var wh *Webhooks
	if m.Webhooks != nil {
		wh = m.Webhooks()
	}
	out := struct {
		Webhooks []webhook.Status `json:"webhooks"`
	}{}
	var err error
	if out.Webhooks, err = wh.Log(int(limit.Value)); err != nil {
		httpx.Internal(w, r, m.Logger, "reading the webhook log", err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	httpx.WriteJSON(w, r, m.Logger, out)
}
