// Package clip cuts text to a byte bound. Text a server or a document
// chose (a detail, a title, a quoted value) is stored, logged and signed,
// so its size must be ours to choose; a cut lands on a rune boundary, so
// valid UTF-8 stays valid, and ends in Mark, so a reader sees it was cut.
package clip

import "unicode/utf8"

// Mark ends a clipped text.
const Mark = "…"

// String is s if it fits max bytes, else its longest prefix that ends on a
// rune boundary and, with Mark appended, still fits.
func String(s string, max int) string {
	out, _ := Cut(s, max)
	return out
}

// Cut is String, also saying whether s was cut. A max too small to hold
// Mark gives Mark alone for any s that does not fit.
func Cut(s string, max int) (string, bool) {
	if len(s) <= max {
		return s, false
	}
	n := max - len(Mark)
	if n < 0 {
		n = 0
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + Mark, true
}
