package node

import (
	"encoding/hex"
	"errors"
	"net/http"
	"time"

	"github.com/histor-observer/histor/internal/httpx"
	"github.com/histor-observer/histor/node/catalog"
	"github.com/histor-observer/histor/node/views"
)

// serveStats answers /api/v1/stats.
func (a *api) serveStats(w http.ResponseWriter, r *http.Request) {
	rd := a.reader(w)
	if rd == nil {
		return
	}
	out := views.BuildStats(rd.Catalog, rd.now(), a.logStats(), a.crawlStats(rd))
	w.Header().Set("Cache-Control", "no-store")
	a.writeJSON(w, r, out)
}

// logStats describes the head /api/v1/log/sth serves, so the two agree on
// sthTimestamp.
func (a *api) logStats() views.LogStats {
	h, err := a.latestSTH()
	switch {
	case errors.Is(err, errEmptyLog):
		return views.LogStats{}
	case err != nil:
		a.logger.Error("reading head for stats", "err", err)
		h = a.log.Latest() // signed too, only newer
	}
	return views.LogStats{TreeSize: h.Size, RootHash: hex.EncodeToString(h.Root[:]), STHTimestamp: catalog.FormatTime(h.Time)}
}

func (a *api) crawlStats(rd *ReadAPI) views.CrawlStats {
	var cs views.CrawlStats
	cs.IntervalSeconds = int64(rd.CrawlInterval / time.Second)
	if a.crawls == nil {
		return cs
	}
	cs.Running, cs.LastError = a.crawls.status()
	if since, p, ok := a.crawls.current(); ok {
		cs.RunningSince = views.NullTime(since)
		if p != nil {
			cs.Progress = &views.CrawlProgress{Done: p.Done, Of: p.Of}
		}
	}
	return cs
}

// Bounds of /api/v1/stats/hosts, HISTOR's.
const (
	defaultHostsLimit = 15
	maxHostsLimit     = 50
)

// serveStatsHosts answers /api/v1/stats/hosts?limit=: endpoints per host
// among the dialled targets.
func (a *api) serveStatsHosts(w http.ResponseWriter, r *http.Request) {
	rd := a.reader(w)
	if rd == nil {
		return
	}
	limit := httpx.Uint{Name: "limit"}
	if err := httpx.ReadUints(r.URL.RawQuery, &limit); err != nil {
		a.fail(w, http.StatusBadRequest, err.Error())
		return
	}
	if !limit.Present {
		limit.Value = defaultHostsLimit
	}
	if limit.Value < 1 || limit.Value > maxHostsLimit {
		a.fail(w, http.StatusBadRequest, "limit must be between 1 and 50")
		return
	}
	hosts, distinct := rd.Catalog.Hosts(int(limit.Value))
	if hosts == nil {
		hosts = []catalog.HostCount{}
	}
	a.writeJSON(w, r, struct {
		Hosts         []catalog.HostCount `json:"hosts"`
		DistinctHosts int                 `json:"distinctHosts"`
	}{hosts, distinct})
}
