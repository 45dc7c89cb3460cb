package node

import (
	"errors"
	"fmt"
	"sync"

	"github.com/histor-observer/histor/crawl/scan"
	hlog "github.com/histor-observer/histor/log"
	"github.com/histor-observer/histor/log/canon"
)

// Bounds of the answer's pattern scan, HISTOR's.
const (
	maxCheckMatches = 200 // matches listed; the tier counts cover all of them
	// maxCachedScans bounds the scan cache. Only sets the node observed are
	// cached, so the crawl bounds what can enter it; this bounds the rest.
	maxCachedScans = 4096
)

// Pattern-scan notes.
const (
	noteScanned  = "A match is a reason to read the definition, not a finding of fact. Matches of the advise tier are advice only."
	noteBounded  = " A scan bound was reached: some text went unscanned or some matches were not found."
	noteBusy     = "Another scan is running; try again in a moment."
	noteNoTools  = "This tool set has not been scanned here; send its tools to have them scanned."
	noteNoBudget = "This client has used its fresh scans for now; try again in %s seconds."
)

// patternScan is the answer's patternScan: the pattern matches of the set
// the client holds (its digest, or the target's current one when it sent
// none), from the cache or scanned now. Never the matches of some other
// set: tools that could not be digested get no patternScan at all.
func (c *checker) patternScan(q *checkQuery, t *CheckTarget, client clientKey, lg Log) map[string]any {
	if q.digestErr != nil || c.patterns == nil {
		return nil
	}
	digest := q.digest
	if digest == "" && t != nil {
		digest = t.ToolSetDigest
	}
	if digest == "" {
		return nil
	}
	ps := c.patterns.Digest()
	if res, ok := c.cache.get(digest, ps); ok {
		return res
	}
	entries, observed := q.entries, false
	if entries == nil {
		// A set the node observed can be scanned from its evidence.
		entries, observed = c.observedTools(lg, digest)
		if entries == nil {
			return map[string]any{"status": "not-scanned", "note": noteNoTools}
		}
	}
	if c.scans == nil {
		return map[string]any{"status": "not-scanned"}
	}
	// Asked only now, so a check that needs no fresh scan spends no budget.
	if ok, retry := c.scans.Allow(client); !ok {
		return map[string]any{"status": "not-scanned", "note": fmt.Sprintf(noteNoBudget, retrySeconds(retry))}
	}
	select {
	case c.slot <- struct{}{}:
	default:
		return map[string]any{"status": "busy", "note": noteBusy}
	}
	res := scanned(scan.ScanWith(c.patterns, entries, nil, c.limits), digest, ps)
	<-c.slot
	if !observed {
		_, observed = c.observedTools(lg, digest)
	}
	// Cached only for sets the node itself observed: a stranger's set is
	// scanned for them and forgotten, so callers cannot grow the cache.
	if observed {
		c.cache.put(digest, ps, res)
	}
	return res
}

// observedTools returns the canonical tool set the node keeps as evidence
// under digest, or nil and false when it keeps none.
func (c *checker) observedTools(lg Log, digest string) ([]any, bool) {
	body, err := lg.Evidence("toolsets", digest)
	if err != nil {
		if !errors.Is(err, hlog.ErrNotFound) {
			c.logger.Error("reading tool-set evidence", "digest", digest, "err", err)
		}
		return nil, false
	}
	v, err := canon.Parse(body)
	tools, ok := v.([]any)
	if err != nil || !ok {
		c.logger.Error("parsing tool-set evidence", "digest", digest, "err", err)
		return nil, false
	}
	return tools, true
}

// scanned renders a scan's result. The map is shared by every answer that
// reads it from the cache, so nothing may change it after this.
func scanned(r scan.Result, digest, patternSet string) map[string]any {
	var block, advise int64
	for _, m := range r.Matches {
		switch m.Tier {
		case scan.TierBlock:
			block++
		case scan.TierAdvise:
			advise++
		}
	}
	listed := r.Matches[:min(len(r.Matches), maxCheckMatches)]
	matches := make([]any, len(listed))
	for i, m := range listed {
		matches[i] = map[string]any{"code": m.Code, "severity": m.Severity, "tier": m.Tier, "tool": m.Tool, "where": m.Where}
	}
	note := noteScanned
	if r.Truncated {
		note += noteBounded
	}
	out := map[string]any{
		"status": "scanned", "toolSetDigest": digest, "patternSet": patternSet,
		"block": block, "advise": advise, "matches": matches, "note": note,
	}
	if len(r.Matches) > maxCheckMatches {
		out["truncated"] = int64(len(r.Matches)) // HISTOR's: how many there were
	}
	if r.Truncated {
		out["bounded"] = true
	}
	return out
}

// scanCache holds rendered scans of observed sets by (digest, pattern set).
// When full, an arbitrary entry makes room: every entry can be recomputed.
type scanCache struct {
	mu  sync.RWMutex
	max int
	m   map[[2]string]map[string]any // guarded by mu
}

func newScanCache(max int) *scanCache {
	return &scanCache{max: max, m: make(map[[2]string]map[string]any)}
}

func (s *scanCache) get(digest, ps string) (map[string]any, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	r, ok := s.m[[2]string{digest, ps}]
	return r, ok
}

func (s *scanCache) put(digest, ps string, r map[string]any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.m) >= s.max {
		for k := range s.m {
			delete(s.m, k)
			break
		}
	}
	s.m[[2]string{digest, ps}] = r
}
