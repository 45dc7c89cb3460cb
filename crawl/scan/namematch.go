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
// full-name skeleton, and a partition index over last-segment skeletons (each
// split into three parts; two names within edit distance 2 share one part
// exactly, at a position shifted by at most 2), so a query inspects a few
// dozen buckets instead of every name. Read-only after construction, so safe
// for concurrent queries.
type NameIndex struct {
	names []string
	ns    []string // lower-cased namespace (before the last '/')
	seg   []string // lower-cased last segment
	skel  [][]rune // skeleton of the last segment
	full  map[string][]int32
	parts map[partKey][]int32
}

type partKey struct {
	n, i int
	s    string
}

// NewNameIndex indexes registry names.
func NewNameIndex(names []string) *NameIndex {
	x := &NameIndex{full: map[string][]int32{}, parts: map[partKey][]int32{}}
	for _, n := range names {
		id := int32(len(x.names))
		ns, seg := splitName(n)
		sk := []rune(skeleton(lastSegment(n)))
		x.names, x.ns, x.seg, x.skel = append(x.names, n), append(x.ns, ns), append(x.seg, seg), append(x.skel, sk)
		fk := skeleton(n)
		x.full[fk] = append(x.full[fk], id)
		if len(sk) < minEditLen || len(sk) > maxEditLen {
			continue
		}
		for i := range 3 {
			a, b := part(len(sk), i)
			k := partKey{len(sk), i, string(sk[a:b])}
			x.parts[k] = append(x.parts[k], id)
		}
	}
	return x
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
	q := []rune(skeleton(lastSegment(name)))
	for id, d := range x.nearSegments(q) {
		if _, ok := found[id]; ok || x.ns[id] == ns || x.seg[id] == seg {
			continue // same owner, or the same plain name under another owner
		}
		kind := KindEditDistance
		if d == 0 {
			kind = KindConfusable
		}
		found[id] = NameMatch{Kind: kind, Name: x.names[id], Distance: d}
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

// nearSegments returns indexed names whose last-segment skeleton is within
// the edit threshold of q, with the distance.
func (x *NameIndex) nearSegments(q []rune) map[int32]int {
	out := map[int32]int{}
	if len(q) < minEditLen || len(q) > maxEditLen {
		return out
	}
	tried := map[int32]bool{}
	for n := max(minEditLen, len(q)-2); n <= len(q)+2; n++ {
		for i := range 3 {
			a, b := part(n, i)
			for s := max(0, a-2); s <= a+2 && s+(b-a) <= len(q); s++ {
				for _, id := range x.parts[partKey{n, i, string(q[s : s+b-a])}] {
					if tried[id] {
						continue
					}
					tried[id] = true
					thr := threshold(len(q), len(x.skel[id]))
					if d := editDistance(q, x.skel[id], thr); d <= thr {
						out[id] = d
					}
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

// editDistance is the Levenshtein distance of a and b, or max+1 once it is
// known to exceed max.
func editDistance(a, b []rune, limit int) int {
	if d := len(a) - len(b); d > limit || -d > limit {
		return limit + 1
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		best := cur[0]
		for j := 1; j <= len(b); j++ {
			c := prev[j-1]
			if a[i-1] != b[j-1] {
				c = 1 + min(prev[j-1], prev[j], cur[j-1])
			}
			cur[j] = c
			best = min(best, c)
		}
		if best > limit {
			return limit + 1
		}
		prev, cur = cur, prev
	}
	return min(prev[len(b)], limit+1)
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
