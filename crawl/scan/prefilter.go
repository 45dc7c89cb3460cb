package scan

import (
	"regexp/syntax"
	"strings"
	"unicode/utf8"
)

// prefilter is a necessary condition for a rule's expression to match,
// derived from its syntax tree at load time, so that most rules are skipped
// on most fields with a substring search instead of an automaton run. It
// never rejects a text the expression would match (TestPrefilterIsNecessary
// and the fuzz target check this).
type prefilter struct {
	lits     []string // one of these occurs in every match; nil: no literal condition
	minRun   int      // a match starts with a run of at least minRun runes of runClass
	runClass []rune   // ranges, as in syntax.Regexp.Rune
	nonASCII bool     // every match is one rune at or above U+0080
}

func newPrefilter(src string) prefilter {
	re, err := syntax.Parse(src, syntax.Perl)
	if err != nil {
		return prefilter{}
	}
	var p prefilter
	if lits, ok := required(re); ok && minLen(lits) > 0 {
		p.lits = lits
	}
	if r := leadingRun(re); r != nil {
		p.minRun, p.runClass = r.Min, r.Sub[0].Rune
	}
	p.nonASCII = re.Op == syntax.OpCharClass && len(re.Rune) > 0 && re.Rune[0] >= utf8.RuneSelf
	return p
}

// may reports whether the expression could match t.
func (p *prefilter) may(t string) bool {
	if p.nonASCII && !hasNonASCII(t) {
		return false
	}
	if p.lits != nil && !containsAny(t, p.lits) {
		return false
	}
	return p.minRun == 0 || longestRun(t, p.runClass) >= p.minRun
}

// required returns literals one of which every match contains.
func required(re *syntax.Regexp) ([]string, bool) {
	switch re.Op {
	case syntax.OpLiteral:
		if re.Flags&syntax.FoldCase != 0 {
			return nil, false
		}
		return []string{string(re.Rune)}, true
	case syntax.OpCapture, syntax.OpPlus:
		return required(re.Sub[0])
	case syntax.OpRepeat:
		if re.Min < 1 {
			return nil, false
		}
		return required(re.Sub[0])
	case syntax.OpConcat:
		var best []string
		for _, s := range re.Sub {
			if l, ok := required(s); ok && minLen(l) > minLen(best) {
				best = l
			}
		}
		return best, best != nil
	case syntax.OpAlternate:
		var all []string
		for _, s := range re.Sub {
			l, ok := required(s)
			if !ok {
				return nil, false
			}
			all = append(all, l...)
		}
		return all, true
	}
	return nil, false
}

func minLen(l []string) int {
	if l == nil {
		return 0
	}
	m := len(l[0])
	for _, s := range l[1:] {
		m = min(m, len(s))
	}
	return m
}

// leadingRun finds a counted character-class run that every match starts
// with, after zero-width assertions, such as the blob rule's [a-z0-9+/_-]{120,1000}.
func leadingRun(re *syntax.Regexp) *syntax.Regexp {
	for re.Op == syntax.OpCapture {
		re = re.Sub[0]
	}
	if re.Op == syntax.OpConcat {
		for _, s := range re.Sub {
			switch s.Op {
			case syntax.OpWordBoundary, syntax.OpBeginText, syntax.OpBeginLine:
				continue
			}
			re = s
			break
		}
	}
	if re.Op == syntax.OpRepeat && re.Min >= 8 && re.Sub[0].Op == syntax.OpCharClass {
		return re
	}
	return nil
}

func longestRun(t string, ranges []rune) int {
	best, cur := 0, 0
	for _, r := range t {
		if inRanges(r, ranges) {
			cur++
			best = max(best, cur)
		} else {
			cur = 0
		}
	}
	return best
}

func inRanges(r rune, ranges []rune) bool {
	for i := 0; i+1 < len(ranges); i += 2 {
		if r >= ranges[i] && r <= ranges[i+1] {
			return true
		}
	}
	return false
}

func containsAny(t string, lits []string) bool {
	for _, l := range lits {
		if strings.Contains(t, l) {
			return true
		}
	}
	return false
}

func hasNonASCII(t string) bool {
	for i := 0; i < len(t); i++ {
		if t[i] >= utf8.RuneSelf {
			return true
		}
	}
	return false
}
