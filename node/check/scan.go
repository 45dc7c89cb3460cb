package check

import (
	"errors"
	"fmt"
	"sync"

	"github.com/histor-observer/histor/crawl/scan"
	"github.com/histor-observer/histor/internal/httpx"
	hlog "github.com/histor-observer/histor/log"
	"github.com/histor-observer/histor/log/canon"
)

// Bounds of the answer's pattern scan, HISTOR's.
const (
	maxCheckMatches = 200 // matches listed; the tier counts cover all of them
	// maxCachedScanBytes bounds the scan cache. Only sets the node observed
	// are cached, so the crawl bounds what can enter it; this bounds the
	// memory (a scan listing 200 matches takes about 30 KB, a typical one
	// well under 1 KB).
	maxCachedScanBytes = 16 << 20
)

// Pattern-scan notes.
const (
	noteScanned  = "A match is a reason to read the definition, not a finding of fact. Matches of the advise tier are advice only."
	noteBounded  = " A scan bound was reached: some text went unscanned or some matches were not found."
	noteBusy     = "Another scan is running; try again in a moment."
	noteNoTools  = "This tool set has not been scanned here; send its tools to have them scanned."
	noteNoBudget = "This client has used its fresh scans for now; try again in %s seconds."
)

// patternScan is the answer's patternScan, in canonical form: the pattern matches of the set
// the client holds (its digest, or the target's current one when it sent
// none), from the cache or scanned now. Never the matches of some other
// set: tools that could not be digested get no patternScan at all.
func (c *Checker) patternScan(q *Query, t *Target, client httpx.ClientKey) []byte {
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
		entries, observed = c.observedTools(digest)
		if entries == nil {
			return encodeScan(map[string]any{"status": "not-scanned", "note": noteNoTools})
		}
	}
	if c.scans == nil {
		return encodeScan(map[string]any{"status": "not-scanned"})
	}
	// Asked only now, so a check that needs no fresh scan spends no budget.
	if ok, retry := c.scans.Allow(client); !ok {
		return encodeScan(map[string]any{"status": "not-scanned", "note": fmt.Sprintf(noteNoBudget, httpx.RetryAfter(retry))})
	}
	select {
	case c.slot <- struct{}{}:
	default:
		return encodeScan(map[string]any{"status": "busy", "note": noteBusy})
	}
	res := c.scanInSlot(entries, digest, ps)
	if !observed {
		_, observed = c.observedTools(digest)
	}
	// Cached only for sets the node itself observed: a stranger's set is
	// scanned for them and forgotten, so callers cannot grow the cache.
	if observed && res != nil {
		c.cache.put(digest, ps, res)
	}
	return res
}

// scanInSlot runs one fresh scan holding the node's scan slot, which is
// given back however the scan ends: a panic over hostile tools that
// net/http recovers must not leave every later scan "busy".
func (c *Checker) scanInSlot(entries []any, digest, ps string) []byte {
	defer func() { <-c.slot }()
	return encodeScan(scanned(scan.ScanWith(c.patterns, entries, nil, c.limits), digest, ps))
}

// observedTools returns the canonical tool set the node keeps as evidence
// under digest, or nil and false when it keeps none.
func (c *Checker) observedTools(digest string) ([]any, bool) {
	body, err := c.log.Evidence(hlog.EvidenceToolSets, digest)
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

// encodeScan writes a patternScan member in canonical form. Its values are
// this file's strings and numbers and the scanner's valid UTF-8, which
// canon always encodes; nil (no member) if it ever could not.
func encodeScan(m map[string]any) []byte {
	b, err := canon.Encode(m)
	if err != nil {
		return nil
	}
	return b
}

// scanned renders a scan's result.
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

// scanCache holds encoded scans of observed sets by (digest, pattern set).
// When full, an arbitrary entry makes room: every entry can be recomputed.
// Entries are shared by every answer that reads them and never changed.
type scanCache struct {
	mu    sync.RWMutex
	max   int                  // bytes
	bytes int                  // guarded by mu; the sum of len over m, never above max
	m     map[[2]string][]byte // guarded by mu
}

func newScanCache(maxBytes int) *scanCache {
	return &scanCache{max: maxBytes, m: make(map[[2]string][]byte)}
}

func (s *scanCache) get(digest, ps string) ([]byte, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	r, ok := s.m[[2]string{digest, ps}]
	return r, ok
}

func (s *scanCache) put(digest, ps string, r []byte) {
	if len(r) > s.max {
		return
	}
	k := [2]string{digest, ps}
	s.mu.Lock()
	defer s.mu.Unlock()
	if old, ok := s.m[k]; ok {
		s.bytes -= len(old)
		delete(s.m, k)
	}
	for victim, b := range s.m {
		if s.bytes+len(r) <= s.max {
			break
		}
		s.bytes -= len(b)
		delete(s.m, victim)
	}
	s.m[k] = r
	s.bytes += len(r)
}
