package scan

import (
	"strings"
	"unicode"

	"golang.org/x/text/unicode/norm"
)

// fold is the text a non-raw rule is matched against: Unicode NFKC (so
// fullwidth and other compatibility spellings read as the plain letters),
// lower case, format characters dropped (so a zero-width space inside a word
// cannot split it from a rule) and every run of white space collapsed to one
// ASCII space. The raw rules look for exactly the characters this removes.
func fold(s string) string {
	if hasNonASCII(s) {
		s = norm.NFKC.String(s) // ASCII is already in NFKC
	}
	var b strings.Builder
	b.Grow(len(s))
	space := false
	for _, r := range s {
		switch {
		case unicode.IsSpace(r):
			space = true
			continue
		case unicode.Is(unicode.Cf, r) || isVariationSelector(r):
			continue
		}
		if space {
			if b.Len() > 0 {
				b.WriteByte(' ')
			}
			space = false
		}
		b.WriteRune(unicode.ToLower(r))
	}
	if space && b.Len() > 0 {
		b.WriteByte(' ')
	}
	return b.String()
}

// isVariationSelector reports the variation selectors, which are not Cf but
// are just as invisible (U+E0100–E01EF can carry one hidden byte each).
func isVariationSelector(r rune) bool {
	return (r >= 0xFE00 && r <= 0xFE0F) || (r >= 0xE0100 && r <= 0xE01EF)
}
