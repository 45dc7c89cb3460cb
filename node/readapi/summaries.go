package readapi

import (
	"net/http"
	"strings"
	"time"

	"github.com/histor-observer/histor/crawl/state"
	"github.com/histor-observer/histor/internal/feedtext"
	"github.com/histor-observer/histor/internal/httpx"
	"github.com/histor-observer/histor/node/catalog"
	"github.com/histor-observer/histor/node/views"
)

// Bounds of /api/v1/stats/hosts, HISTOR's.
const (
	defaultHostsLimit = 15
	maxHostsLimit     = 50
)

// serveStats answers /api/v1/stats.
func (m Mount) serveStats(w http.ResponseWriter, r *http.Request) {
	md := m.model(w)
	if md == nil {
		return
	}
	var log views.LogStats
	if m.LogStats != nil {
		log = m.LogStats()
	}
	out := views.BuildStats(md.Catalog, md.Now(), log, m.crawlStats(md))
	w.Header().Set("Cache-Control", "no-store")
	httpx.WriteJSON(w, r, m.Logger, out)
}

// crawlStats is the crawl's state with md's interval.
func (m Mount) crawlStats(md *Model) views.CrawlStats {
	var cs views.CrawlStats
	if m.Crawl != nil {
		cs = m.Crawl()
	}
	cs.IntervalSeconds = int64(md.CrawlInterval / time.Second)
	return cs
}

// serveStatsHosts answers /api/v1/stats/hosts?limit=: endpoints per host
// among the dialled targets.
func (m Mount) serveStatsHosts(w http.ResponseWriter, r *http.Request) {
	md := m.model(w)
	if md == nil {
		return
	}
	limit := httpx.Uint{Name: "limit"}
	if err := httpx.ReadUints(r.URL.RawQuery, &limit); err != nil {
		httpx.WriteDetail(w, http.StatusBadRequest, err.Error())
		return
	}
	if !limit.Present {
		limit.Value = defaultHostsLimit
	}
	if limit.Value < 1 || limit.Value > maxHostsLimit {
		httpx.WriteDetail(w, http.StatusBadRequest, "limit must be between 1 and 50")
		return
	}
	hosts, distinct := md.Catalog.Hosts(int(limit.Value))
	if hosts == nil {
		hosts = []catalog.HostCount{}
	}
	httpx.WriteJSON(w, r, m.Logger, struct {
		Hosts         []catalog.HostCount `json:"hosts"`
		DistinctHosts int                 `json:"distinctHosts"`
	}{hosts, distinct})
}

// serveShield answers /api/v1/badges/<name>: log, pinned, changes or sth.
func (m Mount) serveShield(w http.ResponseWriter, r *http.Request) {
	md := m.model(w)
	if md == nil {
		return
	}
	in := views.ShieldInputs{Head: m.head(), CrawlInterval: md.CrawlInterval, Now: md.Now()}
	sh, ok := views.NamedShield(r.PathValue("name"), md.Catalog, in)
	if !ok {
		httpx.WriteDetail(w, http.StatusNotFound, "unknown badge")
		return
	}
	w.Header().Set("Cache-Control", "public, max-age=300")
	httpx.WriteJSON(w, r, m.Logger, sh)
}

// serveBadgeSVG answers /badge/<id>.svg, "not listed" for an unknown id.
func (m Mount) serveBadgeSVG(w http.ResponseWriter, r *http.Request) {
	id, ok := strings.CutSuffix(r.PathValue("target_id")+".svg", ".svg")
	if !ok || id == "" {
		httpx.WriteDetail(w, http.StatusNotFound, "not found")
		return
	}
	md := m.model(w)
	if md == nil {
		return
	}
	s := views.ServerByID(md.Catalog, id)
	w.Header().Set("Cache-Control", "public, max-age=3600")
	httpx.WriteBody(w, "image/svg+xml", views.ServerBadge(s, md.Now()))
}

// serveFeed answers /feed.xml: an Atom feed of the latest changes, or with
// ?watch=id,… of the latest changes of those servers.
func (m Mount) serveFeed(w http.ResponseWriter, r *http.Request) {
	md := m.model(w)
	if md == nil {
		return
	}
	watch, err := feedtext.WatchIDs(r.URL.RawQuery)
	if err != nil {
		httpx.WriteDetail(w, http.StatusBadRequest, err.Error())
		return
	}
	var cs []state.Change
	if watch != nil {
		cs, err = md.Catalog.ChangesOf(watch, views.FeedEntries)
	} else {
		cs, err = md.Catalog.Changes(0, views.FeedEntries)
	}
	if err != nil {
		httpx.Internal(w, r, m.Logger, "listing changes", err)
		return
	}
	base := md.PublicBase
	if base == "" {
		base = "http://" + r.Host
	}
	splits := views.FeedSplits(md.Catalog, m.sources().Peers, watch, func(id string, err error) {
		m.Logger.Error("reading the peer view for the feed", "server", id, "err", err)
	})
	httpx.WriteBody(w, "application/atom+xml", views.RenderFeed(md.Catalog, strings.TrimSuffix(base, "/"), splits, cs, md.Now()))
}
