package node

import (
	"encoding/hex"
	"errors"
	"github.com/histor-observer/histor/node/logapi"

	"github.com/histor-observer/histor/node/catalog"
	"github.com/histor-observer/histor/node/views"
)

// logStats describes the head /api/v1/log/sth serves, so the two agree on
// sthTimestamp.
func (a *api) logStats() views.LogStats {
	h, err := logapi.LatestSTH(a.log)
	switch {
	case errors.Is(err, logapi.ErrEmptyLog):
		return views.LogStats{}
	case err != nil:
		a.logger.Error("reading head for stats", "err", err)
		h = a.log.Latest() // signed too, only newer
	}
	return views.LogStats{TreeSize: h.Size, RootHash: hex.EncodeToString(h.Root[:]), STHTimestamp: catalog.FormatTime(h.Time)}
}

// crawlStats is the crawl's state for /api/v1/stats (its interval is the
// read API's, which the reading API adds).
func (a *api) crawlStats() views.CrawlStats {
	var cs views.CrawlStats
	if a.crawls == nil {
		return cs
	}
	cs.Running, cs.LastError = a.crawls.Status()
	if since, p, ok := a.crawls.Current(); ok {
		cs.RunningSince = views.NullTime(since)
		if p != nil {
			cs.Progress = &views.CrawlProgress{Done: p.Done, Of: p.Of}
		}
	}
	return cs
}
