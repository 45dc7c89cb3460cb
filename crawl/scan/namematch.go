package scan

import (
	"cmp"
	"slices"
	"strings"
	"unicode"

	"golang.org/x/text/unicode/norm"
)

// Kinds of name match.
const (
	KindThreatRecord    = "threat-record"            // the name is a record's name or matches its pattern
	KindThreatLookalike = "threat-record-confusable" // the name reads as a record's name
	KindConfusable      = "confusable"               // reads as another registry name (confusable characters)
	KindEditDistance    = "edit-distance"            // last segment within a small edit distance of another namespace's
)

// Lookalike bounds. Segments shorter than minEditLen are not compared by
// edit distance: at that length one edit turns most names into others.
const (
	minEditLen     = 5
	longSegmentLen = 12 // from here on (both sides), two edits are tolerated
	maxEditLen     = 200
	maxNameMatches = 16
	// maxCandidates bounds the skeletons one query compares by edit distance.
	// A registry crowded with near-identical names (server-000001, -000002, …)
	// would otherwise cost thousands of distance computations per name; past
	// this many the query reports what it found so far.
	maxCandidates = 512
)

// NameMatch is one reason a name is inconclusive.
type NameMatch struct {
	Kind      string `json:"kind"`
	Name      string `json:"name"`                // the record name or pattern, or the other registry name
	Reference string `json:"reference,omitempty"` // for threat records
	Distance  int    `json:"distance,omitempty"`  // edit distance of last-segment skeletons
}

// NameVerdict is "pass" when there are no matches and "inconclusive"
// otherwise. A name match is never a fail: a lookalike may be a fork, a
// rename or a coincidence.
func NameVerdict(ms []NameMatch) string {
	if len(ms) == 0 {
		return "pass"
	}
	return "inconclusive"
}

// MatchName checks one name against rs and against registryNames. It builds
// a NameIndex for the call; a crawl matching many names builds the index once
// with NewNameIndex.
func MatchName(rs *RecordSet, name string, registryNames []string) []NameMatch {
	return NewNameIndex(registryNames).Match(rs, name)
}

// NameIndex holds registry names prepared for lookalike queries: a map from
// full-name skeleton, and a partition index over the distinct last-segment
// skeletons. Each skeleton is split into three parts; two strings within edit
// distance 2 share one part exactly, at a position the edits before it can
// have shifted by little (PassJoin's position-aware window), so a query
// inspects a handful of buckets instead of every name. Read-only after
// construction, so safe for concurrent queries.
type NameIndex struct {
	names []string
	ns    []string // lower-cased namespace (before the last '/')
	seg   []string // lower-cased last segment
	full  map[string][]int32

	skels    [][]rune         // distinct last-segment skeletons
	skelOf   map[string]int32 // skeleton → index in skels
	skelName [][]int32        // names per skeleton, in name order
	skelNS   []string         // the one namespace of a skeleton's names, or "" when they have several
	parts    map[partKey]*partList
}

// partList holds the skeletons that share one part. Skeletons whose names
// all belong to one namespace are kept apart by namespace, so a query skips
// its own namespace's skeletons (never lookalikes of it) in one step
// instead of walking them: one owner's thousands of near-identical names
// would otherwise make every one of its queries walk them all.
type partList struct {
	shared []int32  // skeletons of several namespaces, in name order
	ns     []string // single-namespace buckets, sorted by namespace
	byNS   [][]int32
}

func (p *partList) add(ns string, sid int32) {
	if ns == "" {
		p.shared = append(p.shared, sid)
		return
	}
	i, ok := slices.BinarySearch(p.ns, ns)
	if !ok {
		p.ns = slices.Insert(p.ns, i, ns)
		p.byNS = slices.Insert(p.byNS, i, nil)
	}
	p.byNS[i] = append(p.byNS[i], sid)
}

// each calls f for every skeleton of the list outside namespace skip, in a
// fixed order, until f returns false.
func (p *partList) each(skip string, f func(sid int32) bool) bool {
	for _, sid := range p.shared {
		if !f(sid) {
			return false
		}
	}
	for i, ns := range p.ns {
		if ns == skip {
			continue
		}
		for _, sid := range p.byNS[i] {
			if !f(sid) {
				return false
			}
		}
	}
	return true
}

type partKey struct {
	n, i int
	s    string
}

// NewNameIndex indexes registry names.
func NewNameIndex(names []string) *NameIndex {
	x := &NameIndex{full: map[string][]int32{}, skelOf: map[string]int32{}, parts: map[partKey]*partList{}}
	order := make([]int32, len(names))
	for i, n := range names {
		ns, seg := splitName(n)
		x.names, x.ns, x.seg = append(x.names, n), append(x.ns, ns), append(x.seg, seg)
		x.full[skeleton(n)] = append(x.full[skeleton(n)], int32(i))
		order[i] = int32(i)
	}
	slices.SortFunc(order, func(a, b int32) int { return strings.Compare(names[a], names[b]) })
	for _, id := range order {
		x.addSkeleton(skeleton(lastSegment(names[id])), id)
	}
	for sid, rs := range x.skels {
		x.addParts(rs, int32(sid))
	}
	return x
}

// addParts files a skeleton under its three parts, once its names (and so
// whether they share one namespace) are all known.
func (x *NameIndex) addParts(rs []rune, sid int32) {
	if len(rs) < minEditLen || len(rs) > maxEditLen {
		return
	}
	for i := range 3 {
		a, b := part(len(rs), i)
		k := partKey{len(rs), i, string(rs[a:b])}
		p := x.parts[k]
		if p == nil {
			p = &partList{}
			x.parts[k] = p
		}
		p.add(x.skelNS[sid], sid)
	}
}

func (x *NameIndex) addSkeleton(sk string, id int32) {
	sid, ok := x.skelOf[sk]
	if !ok {
		sid = int32(len(x.skels))
		x.skelOf[sk] = sid
		rs := []rune(sk)
		x.skels = append(x.skels, rs)
		x.skelName = append(x.skelName, nil)
		x.skelNS = append(x.skelNS, x.ns[id])
	}
	x.skelName[sid] = append(x.skelName[sid], id)
	if x.skelNS[sid] != x.ns[id] {
		x.skelNS[sid] = ""
	}
}

// part is the i-th of three near-equal parts of a string of n runes.
func part(n, i int) (int, int) {
	return i * n / 3, (i + 1) * n / 3
}

// Match returns the threat records and registry lookalikes for name, sorted
// by kind then name, at most maxNameMatches lookalikes.
func (x *NameIndex) Match(rs *RecordSet, name string) []NameMatch {
	var out []NameMatch
	if rs != nil {
		out = rs.match(name)
	}
	out = append(out, x.lookalikes(name)...)
	slices.SortFunc(out, func(a, b NameMatch) int {
		return cmp.Or(strings.Compare(a.Kind, b.Kind), strings.Compare(a.Name, b.Name))
	})
	return out
}

func (rs *RecordSet) match(name string) []NameMatch {
	var out []NameMatch
	lower := strings.ToLower(name)
	add := func(kind string, i int) {
		r := rs.records[i]
		out = append(out, NameMatch{Kind: kind, Name: r.Name + r.Pattern, Reference: r.Reference})
	}
	if i, ok := rs.byName[lower]; ok {
		add(KindThreatRecord, i)
	} else if i, ok := rs.bySkeleton[skeleton(name)]; ok {
		add(KindThreatLookalike, i)
	}
	for _, p := range rs.patterns {
		if p.re.MatchString(lower) {
			add(KindThreatRecord, p.rec)
		}
	}
	return out
}

func (x *NameIndex) lookalikes(name string) []NameMatch {
	lower := strings.ToLower(name)
	ns, seg := splitName(name)
	found := map[int32]NameMatch{}
	for _, id := range x.full[skeleton(name)] {
		if strings.ToLower(x.names[id]) != lower {
			found[id] = NameMatch{Kind: KindConfusable, Name: x.names[id]}
		}
	}
	for sid, d := range x.nearSegments([]rune(skeleton(lastSegment(name))), ns) {
		kind := KindEditDistance
		if d == 0 {
			kind = KindConfusable
		}
		// Names are in name order, and the result is cut to the first
		// maxNameMatches by (distance, name): later names of one skeleton
		// can never make the cut once that many are taken from it.
		taken := 0
		for _, id := range x.skelName[sid] {
			if taken == maxNameMatches {
				break
			}
			if _, ok := found[id]; ok || x.ns[id] == ns || x.seg[id] == seg {
				continue // same owner, or the same plain name under another owner
			}
			found[id] = NameMatch{Kind: kind, Name: x.names[id], Distance: d}
			taken++
		}
	}
	out := make([]NameMatch, 0, len(found))
	for _, m := range found {
		out = append(out, m)
	}
	slices.SortFunc(out, func(a, b NameMatch) int {
		return cmp.Or(cmp.Compare(a.Distance, b.Distance), strings.Compare(a.Name, b.Name))
	})
	return out[:min(len(out), maxNameMatches)]
}

// maxTau is the largest edit threshold; the partition into maxTau+1 parts
// depends on it.
const maxTau = 2

// nearSegments returns the distinct skeletons within the edit threshold of q,
// with their distance. Skeletons whose names all live in namespace ns (the
// query's own owner) are skipped before any distance is computed, and at most
// maxCandidates skeletons are compared.
func (x *NameIndex) nearSegments(q []rune, ns string) map[int32]int {
	out := map[int32]int{}
	if len(q) < minEditLen || len(q) > maxEditLen {
		return out
	}
	tried := map[int32]bool{}
	scratch := make([]int, 2*(len(q)+maxTau+2))
	for n := max(minEditLen, len(q)-maxTau); n <= len(q)+maxTau; n++ {
		delta := len(q) - n
		for i := range maxTau + 1 {
			a, b := part(n, i)
			lo := max(a-i, a+delta-(maxTau-i), 0)
			hi := min(a+i, a+delta+(maxTau-i), len(q)-(b-a))
			for s := lo; s <= hi; s++ {
				p := x.parts[partKey{n, i, string(q[s : s+b-a])}]
				if p == nil {
					continue
				}
				full := !p.each(ns, func(sid int32) bool {
					if tried[sid] {
						return true
					}
					if len(tried) == maxCandidates {
						return false
					}
					tried[sid] = true
					thr := threshold(len(q), len(x.skels[sid]))
					if d := bandDistance(q, x.skels[sid], thr, scratch); d <= thr {
						out[sid] = d
					}
					return true
				})
				if full {
					return out
				}
			}
		}
	}
	return out
}

func threshold(a, b int) int {
	if min(a, b) >= longSegmentLen {
		return 2
	}
	return 1
}

// editDistance is the Levenshtein distance of a and b, or limit+1 once it is
// known to exceed limit. Only the diagonal band |i-j| <= limit is computed,
// which is all a bounded distance needs.
func editDistance(a, b []rune, limit int) int {
	return bandDistance(a, b, limit, make([]int, 2*(len(b)+2)))
}

// bandDistance is editDistance with caller-provided scratch of at least
// 2*(len(b)+2) ints, so a query comparing many candidates allocates once.
func bandDistance(a, b []rune, limit int, scratch []int) int {
	big := limit + 1
	if d := len(a) - len(b); d > limit || -d > limit {
		return big
	}
	prev, cur := scratch[:len(b)+2], scratch[len(b)+2:2*(len(b)+2)]
	for j := 0; j <= len(b); j++ {
		prev[j] = min(j, big)
	}
	for i := 1; i <= len(a); i++ {
		lo, hi := max(1, i-limit), min(len(b), i+limit)
		cur[lo-1] = big
		if lo == 1 {
			cur[0] = min(i, big)
		}
		best := cur[lo-1]
		for j := lo; j <= hi; j++ {
			c := prev[j-1]
			if a[i-1] != b[j-1] {
				c = 1 + min(prev[j-1], prev[j], cur[j-1])
			}
			cur[j] = min(c, big)
			best = min(best, cur[j])
		}
		if hi+1 <= len(b) {
			cur[hi+1] = big
		}
		if best > limit {
			return big
		}
		prev, cur = cur, prev
	}
	return min(prev[len(b)], big)
}

// splitName splits a registry name at its last '/' into lower-cased
// namespace and last segment.
func splitName(name string) (ns, seg string) {
	lower := strings.ToLower(name)
	if i := strings.LastIndexByte(lower, '/'); i >= 0 {
		return lower[:i], lower[i+1:]
	}
	return "", lower
}

// lastSegment is the name after its last '/', case kept: the skeleton needs
// to see 'I' before lower-casing turns it into 'i'.
func lastSegment(name string) string {
	return name[strings.LastIndexByte(name, '/')+1:]
}

// confusables maps characters that read as a Latin letter or digit to it:
// Cyrillic and Greek look-alikes, and the digit/letter pairs 0/o and 1/l/I.
// It is applied before lower-casing, because 'I' reads as 'l', not 'i'.
var confusables = map[rune]rune{
	'а': 'a', 'А': 'a', 'е': 'e', 'Е': 'e', 'о': 'o', 'О': 'o', 'р': 'p', 'Р': 'p',
	'с': 'c', 'С': 'c', 'х': 'x', 'Х': 'x', 'у': 'y', 'У': 'y', 'і': 'i', 'І': 'l',
	'ј': 'j', 'ѕ': 's', 'к': 'k', 'К': 'k', 'м': 'm', 'М': 'm', 'н': 'h', 'Н': 'h',
	'т': 't', 'Т': 't', 'в': 'b', 'В': 'b', 'ԁ': 'd', 'ɡ': 'g', 'ӏ': 'l',
	'ο': 'o', 'Ο': 'o', 'α': 'a', 'Α': 'a', 'ε': 'e', 'Ε': 'e', 'ι': 'i', 'Ι': 'l',
	'κ': 'k', 'Κ': 'k', 'ν': 'v', 'ρ': 'p', 'Ρ': 'p', 'τ': 't', 'Τ': 't', 'χ': 'x',
	'Χ': 'x', 'υ': 'u', 'Β': 'b', 'Η': 'h', 'Μ': 'm', 'Ν': 'n', 'Ζ': 'z',
	'0': 'o', '1': 'l', 'I': 'l', '|': 'l', '_': '-', '.': '-',
}

// skeleton folds a name to what it reads as: NFKC, confusable characters
// mapped, lower case, and the two-letter look-alikes rn→m and vv→w.
func skeleton(s string) string {
	s = norm.NFKC.String(s)
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		if c, ok := confusables[r]; ok {
			r = c
		}
		b.WriteRune(unicode.ToLower(r))
	}
	out := b.String()
	if strings.Contains(out, "rn") || strings.Contains(out, "vv") {
		out = strings.NewReplacer("rn", "m", "vv", "w").Replace(out)
	}
	return out
}
