package scan

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/histor-observer/histor/log/canon"
)

// Match is one finding. Code, Severity, Tier, Tool and Where are what a
// tool-def-pattern-scan label records; Span is for people reading evidence.
type Match struct {
	Code     string `json:"code"`
	Severity string `json:"severity"`
	Tier     string `json:"tier"`
	Tool     string `json:"tool"` // "" for the server's instructions
	// Where names the field: "name", "description", "instructions", or a path
	// into a schema such as "inputSchema.properties.x.description" (a path
	// ending at a member name when the member name itself matched).
	Where string `json:"where"`
	// Span is the byte range of the match in the scanned text: the folded
	// text, or the text as sent for a raw rule.
	Span [2]int `json:"-"`
	// Text is the matched text itself (Span's bytes of that text), so a
	// reader can judge a match without re-deriving the fold.
	Text string `json:"-"`
}

// Limits bound one scan. A scan that hits a bound still returns what it
// found, with Result.Truncated set, so a label never passes over text it did
// not read.
type Limits struct {
	BytesPerText   int // one field; the rest of it is not scanned
	BytesPerTool   int
	BytesTotal     int // text scanned, plus nodeCost per schema node visited
	MatchesPerTool int
	MatchesTotal   int
	SchemaDepth    int
	HitsPerRule    int // regexp hits a rule's guards may inspect per field
}

// DefaultLimits fit the crawl's bounds: a tool set is at most 3 MiB, and the
// largest real one seen was 1.5 MB.
var DefaultLimits = Limits{
	BytesPerText:   64 << 10,
	BytesPerTool:   256 << 10,
	BytesTotal:     8 << 20,
	MatchesPerTool: 64,
	MatchesTotal:   2000,
	SchemaDepth:    32,
	HitsPerRule:    16,
}

// Result is a bounded scan's outcome.
type Result struct {
	Matches   []Match
	Truncated bool // some text went unscanned or some matches were dropped by a bound
}

// Scan runs ps over tools (as parsed by log/canon: objects are map[string]any)
// and the server's instructions (nil when none were sent) with DefaultLimits.
func Scan(ps *PatternSet, tools []any, instructions *string) []Match {
	return ScanWith(ps, tools, instructions, DefaultLimits).Matches
}

// ScanWith is Scan with explicit limits. The order of the matches is
// deterministic: instructions first, then tools by name in UTF-16 code units,
// then field, position and code. Within one field each rule reports at most
// once, and matches equal in all five label members are reported once.
func ScanWith(ps *PatternSet, tools []any, instructions *string, lim Limits) Result {
	s := &scanner{ps: ps, lim: lim, budget: lim.BytesTotal}
	if instructions != nil {
		s.startTool("")
		s.field(SurfaceInstructions, "instructions", *instructions)
	}
	for _, t := range tools {
		s.tool(t)
	}
	slices.SortStableFunc(s.out, compareMatches)
	return Result{Matches: dedupe(s.out), Truncated: s.truncated}
}

// Bounds on the walk of a schema.
const (
	// nodeCost is what visiting one schema node (an object member or an
	// array element) charges against Limits.BytesTotal besides the text it
	// scans, so a tree of numbers cannot be walked for free: the fewest
	// bytes a node and its punctuation can take in JSON (a one-digit
	// element and its comma). Charging no more than that, a tool set within
	// the crawl's 3 MiB bound costs at most twice its size and is never
	// truncated by the default 8 MiB budget for its shape alone.
	nodeCost = 2
	// whereKeyBytes is the longest member name written whole in a Where;
	// a longer one is written as its first whereKeyPrefix bytes and a hash
	// of all of it, so a match's Where stays short and names stay distinct.
	whereKeyBytes  = 64
	whereKeyPrefix = 32
	// whereHashBytes is how much of a long name's SHA-256 a Where shows.
	whereHashBytes = 12
)

type scanner struct {
	ps        *PatternSet
	lim       Limits
	out       []Match
	budget    int // bytes left for the whole scan
	toolLeft  int // bytes left for the current tool
	toolHits  int
	toolName  string
	truncated bool
	memo      map[memoKey][]ruleHit
	root      string // the field being scanned: "name", "inputSchema", …
	steps     []step // the path from root to the node being scanned
}

// step is one step from a schema's root: a member name, or an array index
// when key is "" and index is not negative. A Where is written from the
// steps only when a match is recorded.
type step struct {
	key   string
	index int
}

func (s *scanner) startTool(name string) {
	s.toolName, s.toolLeft, s.toolHits = name, s.lim.BytesPerTool, 0
}

func (s *scanner) tool(t any) {
	obj, ok := t.(map[string]any)
	if !ok {
		return
	}
	name, _ := obj["name"].(string)
	s.startTool(name)
	s.field(SurfaceName, "name", name)
	if d, ok := obj["description"].(string); ok {
		s.field(SurfaceDescription, "description", d)
	}
	for _, sf := range []Surface{SurfaceInputSchema, SurfaceOutputSchema} {
		if v, ok := obj[string(sf)]; ok {
			s.root, s.steps = string(sf), s.steps[:0]
			s.walk(sf, v, 0)
		}
	}
}

// field scans a top-level text member.
func (s *scanner) field(sf Surface, where, raw string) {
	s.root, s.steps = where, s.steps[:0]
	s.text(sf, raw)
}

// walk scans every string value and member name in a schema, in member-name
// order so the result does not depend on map iteration. Every member and
// element visited is charged nodeCost; the walk stops when the budget is
// spent.
func (s *scanner) walk(sf Surface, v any, depth int) {
	if depth > s.lim.SchemaDepth {
		s.truncated = true
		return
	}
	switch v := v.(type) {
	case string:
		s.text(sf, v)
	case []any:
		for i, e := range v {
			if !s.visit(step{index: i}) {
				return
			}
			s.walk(sf, e, depth+1)
			s.steps = s.steps[:len(s.steps)-1]
		}
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.SortFunc(keys, canon.CompareUTF16)
		for _, k := range keys {
			if !s.visit(step{key: k, index: -1}) {
				return
			}
			s.text(sf, k)
			s.walk(sf, v[k], depth+1)
			s.steps = s.steps[:len(s.steps)-1]
		}
	}
}

// visit charges one node against the budget and steps into it; it reports
// false, marking the scan truncated, when the budget is spent.
func (s *scanner) visit(st step) bool {
	if s.budget < nodeCost {
		s.budget = 0
		s.truncated = true
		return false
	}
	s.budget -= nodeCost
	s.steps = append(s.steps, st)
	return true
}

// where writes the Where of the text being scanned.
func (s *scanner) where() string {
	var sb strings.Builder
	sb.WriteString(s.root)
	for _, st := range s.steps {
		if st.index >= 0 {
			sb.WriteString("[" + strconv.Itoa(st.index) + "]")
			continue
		}
		writeMember(&sb, st.key)
	}
	return sb.String()
}

// writeMember writes a member as .name when it is a plain identifier and as
// ["name"] (JSON-quoted) otherwise, so a path cannot be forged by a member
// name containing dots. A name over whereKeyBytes is written as
// ["prefix"…hash], which no whole name can be written as.
func writeMember(sb *strings.Builder, k string) {
	if len(k) > whereKeyBytes {
		n := whereKeyPrefix
		for n > 0 && !utf8.RuneStart(k[n]) {
			n--
		}
		sum := sha256.Sum256([]byte(k))
		sb.WriteString("[" + strconv.Quote(k[:n]) + "…" + hex.EncodeToString(sum[:whereHashBytes]) + "]")
		return
	}
	plain := k != ""
	for _, r := range k {
		if !(r == '_' || r == '-' || r == '$' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			plain = false
			break
		}
	}
	if plain {
		sb.WriteString("." + k)
		return
	}
	sb.WriteString("[" + strconv.Quote(k) + "]")
}

// text scans one field with every rule that applies to its surface. Short
// texts repeat across tools (schema keywords, type names, common
// descriptions), so their rule hits are remembered for the rest of the scan.
func (s *scanner) text(sf Surface, raw string) {
	if raw == "" {
		return
	}
	raw = s.take(raw)
	if raw == "" {
		return
	}
	k := memoKey{sf, raw}
	hits, ok := s.memo[k]
	if !ok {
		hits = s.hits(sf, raw)
		if len(raw) <= memoMaxText {
			if s.memo == nil {
				s.memo = map[memoKey][]ruleHit{}
			}
			s.memo[k] = hits
		}
	}
	if len(hits) == 0 {
		return
	}
	where := s.where()
	for _, h := range hits {
		r := &s.ps.rules[h.rule]
		s.add(Match{Code: r.Code, Severity: r.Severity, Tier: r.Tier, Tool: s.toolName, Where: where, Span: h.span, Text: h.text})
	}
}

// memoMaxText bounds the texts remembered, and so the memo's size.
const memoMaxText = 64

type memoKey struct {
	sf   Surface
	text string
}

type ruleHit struct {
	rule int
	span [2]int
	text string // the matched bytes
}

// hits runs every rule for surface sf over raw (or its fold).
func (s *scanner) hits(sf Surface, raw string) []ruleHit {
	var out []ruleHit
	var folded string
	bit := surfaceBit(sf)
	for i := range s.ps.rules {
		r := &s.ps.rules[i]
		if r.on&bit == 0 {
			continue
		}
		t := raw
		if !r.Raw {
			if folded == "" {
				folded = fold(raw)
			}
			t = folded
		}
		if span, ok := s.firstKept(r, sf, t); ok {
			out = append(out, ruleHit{i, span, t[span[0]:span[1]]})
		}
	}
	return out
}

// take charges the byte budgets for a field and cuts it to what they allow,
// at a rune boundary.
func (s *scanner) take(t string) string {
	n := min(len(t), s.lim.BytesPerText, s.toolLeft, s.budget)
	if n < len(t) {
		s.truncated = true
		for n > 0 && !utf8.RuneStart(t[n]) {
			n--
		}
		t = t[:n]
	}
	s.toolLeft -= n
	s.budget -= n
	return t
}

// firstKept returns the first regexp hit no guard drops; later hits are tried
// so that one benign early hit cannot mask a real one.
func (s *scanner) firstKept(r *compiledRule, sf Surface, t string) ([2]int, bool) {
	if !r.pre.may(t) {
		return [2]int{}, false
	}
	for _, loc := range r.re.FindAllStringIndex(t, s.lim.HitsPerRule) {
		h := hit{text: t, start: loc[0], end: loc[1], surface: sf}
		if !dropped(r, h) {
			return [2]int{loc[0], loc[1]}, true
		}
	}
	return [2]int{}, false
}

func dropped(r *compiledRule, h hit) bool {
	for _, g := range r.guards {
		if g(h) {
			return true
		}
	}
	return false
}

func (s *scanner) add(m Match) {
	if s.toolHits >= s.lim.MatchesPerTool || len(s.out) >= s.lim.MatchesTotal {
		s.truncated = true
		return
	}
	s.toolHits++
	s.out = append(s.out, m)
}

func compareMatches(a, b Match) int {
	if (a.Where == "instructions" && a.Tool == "") != (b.Where == "instructions" && b.Tool == "") {
		if a.Tool == "" && a.Where == "instructions" {
			return -1
		}
		return 1
	}
	if c := canon.CompareUTF16(a.Tool, b.Tool); c != 0 {
		return c
	}
	if c := strings.Compare(a.Where, b.Where); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Span[0], b.Span[0]); c != 0 {
		return c
	}
	if c := strings.Compare(a.Code, b.Code); c != 0 {
		return c
	}
	return cmp.Compare(a.Span[1], b.Span[1])
}

// dedupe keeps the first of matches equal in every label member; the input is
// sorted, but equal matches need not be adjacent, so a set is used.
func dedupe(in []Match) []Match {
	type key struct{ code, sev, tier, tool, where string }
	seen := make(map[key]bool, len(in))
	out := in[:0]
	for _, m := range in {
		k := key{m.Code, m.Severity, m.Tier, m.Tool, m.Where}
		if !seen[k] {
			seen[k] = true
			out = append(out, m)
		}
	}
	return out
}
