package catalog

import (
	"crypto/sha256"
	"fmt"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/histor-observer/histor/crawl/scan"
	"github.com/histor-observer/histor/log/canon"
)

// MaxMatches is how many pattern matches a server page shows, HISTOR's
// MAX_MATCHES.
const MaxMatches = 200

// maxSpanBytes bounds the matched text shown with a match; a rule's match
// is a phrase, and a longer one is cut on a rune boundary.
const maxSpanBytes = 200

// maxCachedScans bounds the scan cache; one entry is at most MaxMatches
// short matches.
const maxCachedScans = 4096

// Match is one pattern match as a server page shows it, the shape of
// HISTOR's patternMatches entries: the label's members and the matched text.
type Match struct {
	Code     string `json:"code"`
	Severity string `json:"severity"`
	Tier     string `json:"tier"`
	Tool     string `json:"tool"`
	Where    string `json:"where"`
	// Span is the text the rule matched: of the folded text (NFKC, lower
	// case, white space collapsed) for most rules, as sent for raw ones.
	Span string `json:"span"`
}

type scanKey struct {
	toolSet, patternSet string
	instructions        [32]byte // SHA-256 of the instructions scanned with the set
}

// matchCache keeps scan results per tool set, pattern set and instructions.
// Evidence never changes, so an entry is never stale.
type matchCache struct {
	mu sync.Mutex
	m  map[scanKey][]Match // guarded by mu
}

func (mc *matchCache) get(k scanKey) ([]Match, bool) {
	mc.mu.Lock()
	defer mc.mu.Unlock()
	v, ok := mc.m[k]
	return v, ok
}

func (mc *matchCache) put(k scanKey, v []Match) {
	mc.mu.Lock()
	defer mc.mu.Unlock()
	if mc.m == nil || len(mc.m) >= maxCachedScans {
		mc.m = make(map[scanKey][]Match) // a full cache starts over: simpler than LRU, and rare
	}
	mc.m[k] = v
}

// PatternMatches re-derives the pattern matches of s's current tool set
// (and the instructions stored with it) under the catalog's pattern set, at
// most MaxMatches. It returns nil when there is no pattern set or no tool
// set on record. Results are cached, so a page is scanned once per
// (tool set, pattern set, instructions).
func (c *Catalog) PatternMatches(s *Server) ([]Match, error) {
	ps := c.opt.Patterns
	if ps == nil || s.Obs.ToolSetDigest == "" {
		return nil, nil
	}
	k := scanKey{toolSet: s.Obs.ToolSetDigest, patternSet: ps.Digest()}
	if in := s.Obs.Instructions; in != nil {
		k.instructions = sha256.Sum256([]byte("\x01" + *in)) // "\x01": none and "" differ
	}
	if v, ok := c.matches.get(k); ok {
		return v, nil
	}
	body, err := c.ToolSet(s)
	if err != nil || body == nil {
		return nil, err
	}
	v, err := canon.Parse(body)
	if err != nil {
		return nil, fmt.Errorf("parsing stored tool set %s: %w", s.Obs.ToolSetDigest, err)
	}
	tools, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("stored tool set %s is not an array", s.Obs.ToolSetDigest)
	}
	found := toMatches(scan.Scan(ps, tools, s.Obs.Instructions))
	c.matches.put(k, found)
	return found, nil
}

func toMatches(ms []scan.Match) []Match {
	out := make([]Match, 0, min(len(ms), MaxMatches))
	for _, m := range ms[:min(len(ms), MaxMatches)] {
		out = append(out, Match{Code: m.Code, Severity: m.Severity, Tier: m.Tier, Tool: m.Tool,
			Where: m.Where, Span: clipSpan(m.Text)})
	}
	return out
}

// clipSpan cuts t to maxSpanBytes on a rune boundary and copies it, so the
// cache keeps no tool set alive through a substring.
func clipSpan(t string) string {
	if len(t) > maxSpanBytes {
		n := maxSpanBytes
		for n > 0 && !utf8.RuneStart(t[n]) {
			n--
		}
		t = t[:n] + "…"
	}
	return strings.Clone(t)
}
