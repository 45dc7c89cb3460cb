package node

import (
	"encoding/hex"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/histor-observer/histor/crawl/registry"
	"github.com/histor-observer/histor/crawl/state"
	"github.com/histor-observer/histor/internal/httpx"
	"github.com/histor-observer/histor/node/catalog"
)

const day = 24 * time.Hour

// statsAnswer is /api/v1/stats, HISTOR's members.
type statsAnswer struct {
	GeneratedAt   string         `json:"generatedAt"`
	Targets       catalog.Counts `json:"targets"`
	Changes       changeCounts   `json:"changes"`
	Log           logStats       `json:"log"`
	ClientReports struct {
		Last7d int64 `json:"last7d"`
	} `json:"clientReports"`
	Crawl   crawlStats `json:"crawl"`
	LastRun *runStats  `json:"lastRun,omitempty"`
}

type changeCounts struct {
	Last24h int `json:"last24h"`
	Last7d  int `json:"last7d"`
	Last30d int `json:"last30d"`
}

type logStats struct {
	TreeSize     uint64 `json:"treeSize"`
	RootHash     string `json:"rootHash,omitempty"`
	STHTimestamp string `json:"sthTimestamp,omitempty"`
}

type crawlStats struct {
	Running         bool           `json:"running"`
	RunningSince    *string        `json:"runningSince"`
	Progress        *crawlProgress `json:"progress"`
	IntervalSeconds int64          `json:"intervalSeconds"`
	LastError       *string        `json:"lastError"`
}

// crawlProgress is HISTOR's progress member: targets done of the crawl's
// targets. Ours counts every target of the crawl, the ones it does not dial
// (templated, opted out) too, and moves with each committed batch.
type crawlProgress struct {
	Done int `json:"done"`
	Of   int `json:"of"`
}

// runStats is HISTOR's lastRun, filled from what our crawl records.
type runStats struct {
	ID                int            `json:"id"` // the run's number, 1 for the first
	StartedAt         string         `json:"startedAt"`
	FinishedAt        *string        `json:"finishedAt"`
	RegistryServers   *int           `json:"registryServers"` // null for runs recorded before it was kept
	RegistryEndpoints int            `json:"registryEndpoints"`
	NotAttempted      map[string]int `json:"notAttempted"`
	Attempted         int            `json:"attempted"`
	Statuses          map[string]int `json:"statuses"`
	LabelsIssued      map[string]int `json:"labelsIssued"` // by short method name, HISTOR's; {} for runs recorded before it was kept
	Changes           int            `json:"changes"`
	Error             *string        `json:"error"`
	Complete          bool           `json:"complete"`
}

// serveStats answers /api/v1/stats.
func (a *api) serveStats(w http.ResponseWriter, r *http.Request) {
	rd := a.reader(w)
	if rd == nil {
		return
	}
	c, now := rd.Catalog, rd.now()
	out := statsAnswer{
		GeneratedAt: catalog.FormatTime(now),
		Targets:     c.Counts(),
		Changes: changeCounts{
			c.ChangesSince(now.Add(-day)), c.ChangesSince(now.Add(-7 * day)), c.ChangesSince(now.Add(-30 * day)),
		},
		Log:   a.logStats(),
		Crawl: a.crawlStats(rd),
	}
	out.ClientReports.Last7d = c.ReportsSince(now.UTC().Add(-7 * day).Format(time.DateOnly))
	if run, n := c.LastRun(); run != nil {
		out.LastRun = toRunStats(run, n)
	}
	w.Header().Set("Cache-Control", "no-store")
	a.writeJSON(w, r, out)
}

// logStats describes the head /api/v1/log/sth serves, so the two agree on
// sthTimestamp.
func (a *api) logStats() logStats {
	h, err := a.latestSTH()
	switch {
	case errors.Is(err, errEmptyLog):
		return logStats{}
	case err != nil:
		a.logger.Error("reading head for stats", "err", err)
		h = a.log.Latest() // signed too, only newer
	}
	return logStats{h.Size, hex.EncodeToString(h.Root[:]), catalog.FormatTime(h.Time)}
}

func (a *api) crawlStats(rd *ReadAPI) crawlStats {
	var cs crawlStats
	cs.IntervalSeconds = int64(rd.CrawlInterval / time.Second)
	if a.crawls == nil {
		return cs
	}
	cs.Running, cs.LastError = a.crawls.status()
	if since, p, ok := a.crawls.current(); ok {
		cs.RunningSince = nullTime(since)
		if p != nil {
			cs.Progress = &crawlProgress{p.Done, p.Of}
		}
	}
	return cs
}

// skipStatuses are the statuses of targets the crawl never dials.
var skipStatuses = map[string]bool{registry.SkipTemplated: true, registry.SkipOptOut: true}

func toRunStats(run *state.Run, n int) *runStats {
	rs := &runStats{
		ID: n, StartedAt: catalog.FormatTime(run.Started), FinishedAt: nullTime(run.Ended),
		RegistryServers: run.RegistryServers, RegistryEndpoints: run.Targets, NotAttempted: map[string]int{},
		Statuses: map[string]int{}, LabelsIssued: make(map[string]int, len(run.ByMethod)), Changes: run.Changes,
		Error: nullStr(run.Error), Complete: run.Complete,
	}
	for m, k := range run.ByMethod {
		rs.LabelsIssued[m[strings.LastIndex(m, ":")+1:]] += k
	}
	skipped := 0
	for status, k := range run.ByStatus {
		if skipStatuses[status] {
			rs.NotAttempted[status] = k
			skipped += k
			continue
		}
		rs.Statuses[status] = k
	}
	rs.Attempted = run.Targets - skipped
	return rs
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
