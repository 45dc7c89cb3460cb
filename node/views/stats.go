package views

import (
	"strings"
	"time"

	"github.com/histor-observer/histor/crawl/registry"
	"github.com/histor-observer/histor/crawl/state"
	"github.com/histor-observer/histor/node/catalog"
)

const day = 24 * time.Hour

// Stats is /api/v1/stats, HISTOR's members.
type Stats struct {
	GeneratedAt   string         `json:"generatedAt"`
	Targets       catalog.Counts `json:"targets"`
	Changes       ChangeCounts   `json:"changes"`
	Log           LogStats       `json:"log"`
	ClientReports struct {
		Last7d int64 `json:"last7d"`
	} `json:"clientReports"`
	Crawl   CrawlStats `json:"crawl"`
	LastRun *RunStats  `json:"lastRun,omitempty"`
}

// ChangeCounts counts the changes of the last day, week and 30 days.
type ChangeCounts struct {
	Last24h int `json:"last24h"`
	Last7d  int `json:"last7d"`
	Last30d int `json:"last30d"`
}

// LogStats is the log's head as /api/v1/log/sth serves it; empty while
// the log has none.
type LogStats struct {
	TreeSize     uint64 `json:"treeSize"`
	RootHash     string `json:"rootHash,omitempty"`
	STHTimestamp string `json:"sthTimestamp,omitempty"`
}

// CrawlStats is the crawl's state: whether one runs, since when and how
// far, its interval and the error the newest one ended with.
type CrawlStats struct {
	Running         bool           `json:"running"`
	RunningSince    *string        `json:"runningSince"`
	Progress        *CrawlProgress `json:"progress"`
	IntervalSeconds int64          `json:"intervalSeconds"`
	LastError       *string        `json:"lastError"`
}

// CrawlProgress is HISTOR's progress member: targets done of the crawl's
// targets. Ours counts every target of the crawl, the ones it does not dial
// (templated, opted out) too, and moves with each committed batch.
type CrawlProgress struct {
	Done int `json:"done"`
	Of   int `json:"of"`
}

// RunStats is HISTOR's lastRun, filled from what our crawl records.
type RunStats struct {
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

// BuildStats is /api/v1/stats from c as of now, with the log's and the
// crawl's state as the node reads them.
func BuildStats(c *catalog.Catalog, now time.Time, log LogStats, crawl CrawlStats) Stats {
	out := Stats{
		GeneratedAt: catalog.FormatTime(now),
		Targets:     c.Counts(),
		Changes: ChangeCounts{
			c.ChangesSince(now.Add(-day)), c.ChangesSince(now.Add(-7 * day)), c.ChangesSince(now.Add(-30 * day)),
		},
		Log:   log,
		Crawl: crawl,
	}
	out.ClientReports.Last7d = c.ReportsSince(now.UTC().Add(-7 * day).Format(time.DateOnly))
	if run, n := c.LastRun(); run != nil {
		out.LastRun = toRunStats(run, n)
	}
	return out
}

// skipStatuses are the statuses of targets the crawl never dials.
var skipStatuses = map[string]bool{registry.SkipTemplated: true, registry.SkipOptOut: true}

func toRunStats(run *state.Run, n int) *RunStats {
	rs := &RunStats{
		ID: n, StartedAt: catalog.FormatTime(run.Started), FinishedAt: NullTime(run.Ended),
		RegistryServers: run.RegistryServers, RegistryEndpoints: run.Targets, NotAttempted: map[string]int{},
		Statuses: map[string]int{}, LabelsIssued: make(map[string]int, len(run.ByMethod)), Changes: run.Changes,
		Error: NullString(run.Error), Complete: run.Complete,
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
