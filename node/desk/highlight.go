package desk

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// Highlight splits text into runs, marking every place one of spans
// occurs. A pattern rule matches the folded text (NFKC, lower case, white
// space collapsed to one space), so the spans are looked for in text
// folded the same way and the marks are mapped back onto the text as
// sent; a span found nowhere marks nothing.
func Highlight(text string, spans []string) []Segment {
	if text == "" {
		return nil
	}
	folded, at := fold(text)
	marked := make([]bool, len(text))
	found := false
	for _, sp := range spans {
		sp = strings.TrimSuffix(sp, "…") // a clipped span: mark what is left
		needle, _ := fold(sp)
		if needle == "" {
			continue
		}
		for from := 0; ; {
			i := strings.Index(folded[from:], needle)
			if i < 0 {
				break
			}
			start, last := at[from+i], at[from+i+len(needle)-1]
			_, size := utf8.DecodeRuneInString(text[last:])
			end := last + size
			for k := start; k < end; k++ {
				marked[k] = true
			}
			found = true
			from += i + len(needle)
		}
	}
	if !found {
		return []Segment{{Text: text}}
	}
	return runs(text, marked)
}

// fold is the folded form of s and, for each byte of it, the byte offset
// in s of the rune it came from.
func fold(s string) (string, []int) {
	var b strings.Builder
	at := make([]int, 0, len(s))
	space := false
	var buf [utf8.UTFMax]byte
	for i, r := range s {
		if unicode.IsSpace(r) {
			if !space && b.Len() > 0 {
				b.WriteByte(' ')
				at = append(at, i)
			}
			space = true
			continue
		}
		space = false
		f := string(buf[:utf8.EncodeRune(buf[:], r)])
		if r >= utf8.RuneSelf {
			f = norm.NFKC.String(f)
		}
		f = strings.ToLower(f)
		b.WriteString(f)
		for range len(f) {
			at = append(at, i)
		}
	}
	out := b.String()
	if strings.HasSuffix(out, " ") {
		out, at = out[:len(out)-1], at[:len(at)-1]
	}
	return out, at
}

func runs(text string, marked []bool) []Segment {
	var out []Segment
	start := 0
	for i := 1; i <= len(text); i++ {
		if i == len(text) || marked[i] != marked[start] {
			out = append(out, Segment{Text: text[start:i], Mark: marked[start]})
			start = i
		}
	}
	return out
}
