package catalog

import (
	"cmp"
	"slices"
	"time"
)

const dayFormat = "2006-01-02"

// ReportRow is one row of a server page's clientReports: HISTOR's
// client_reports, one per tool-set digest reported in the window.
type ReportRow struct {
	ToolSet  string `json:"toolset"`
	Reports  int64  `json:"reports"`
	FirstDay string `json:"first_day"`
	LastDay  string `json:"last_day"`
}

// ClientReports returns target id's client reports of the last ReportDays
// days, summed per tool-set digest, most reported first, at most
// MaxReportRows.
func (c *Catalog) ClientReports(id string) ([]ReportRow, error) {
	rs, err := c.opt.Store.ClientReports(id, reportCutoff(c.opt.Now(), ReportDays))
	if err != nil {
		return nil, err
	}
	idx := map[string]int{}
	var out []ReportRow
	for _, r := range rs { // oldest day first
		i, ok := idx[r.Digest]
		if !ok {
			i = len(out)
			idx[r.Digest] = i
			out = append(out, ReportRow{ToolSet: r.Digest, FirstDay: r.Day})
		}
		out[i].Reports += r.Count
		out[i].LastDay = r.Day
	}
	slices.SortStableFunc(out, func(a, b ReportRow) int { return cmp.Compare(b.Reports, a.Reports) })
	return out[:min(len(out), MaxReportRows)], nil
}

// loadReports sums every target's client reports per day over the window.
func (c *Catalog) loadReports(servers []*Server) (map[string]int64, error) {
	since := reportCutoff(c.opt.Now(), ReportDays)
	days := map[string]int64{}
	for _, s := range servers {
		rs, err := c.opt.Store.ClientReports(s.ID, since)
		if err != nil {
			return nil, err
		}
		for _, r := range rs {
			days[r.Day] += r.Count
		}
	}
	return days, nil
}

// ReportsSince is the number of client reports on day since (YYYY-MM-DD)
// and later, HISTOR's client_report_total; since must be within the last
// ReportDays days.
func (c *Catalog) ReportsSince(since string) int64 {
	c.reportMu.Lock()
	defer c.reportMu.Unlock()
	var n int64
	for day, k := range c.reports {
		if day >= since {
			n += k
		}
	}
	return n
}

// AddClientReport records one /check contribution of digest for target id
// today (UTC) in the store and counts it at once.
func (c *Catalog) AddClientReport(id, digest string) error {
	day := c.opt.Now().UTC().Format(dayFormat)
	if err := c.opt.Store.AddClientReport(id, digest, day); err != nil {
		return err
	}
	c.reportMu.Lock()
	c.reports[day]++
	c.reportMu.Unlock()
	return nil
}

// reportCutoff is the first day of a window of n days ending today.
func reportCutoff(now time.Time, n int) string {
	return now.UTC().AddDate(0, 0, -n).Format(dayFormat)
}
