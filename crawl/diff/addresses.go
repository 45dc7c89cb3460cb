package diff

import (
	"regexp"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Where a tool set can point outside itself: a URL's host, an e-mail
// address, a bare domain, an IPv4 address. The rules are HISTOR's
// (diffing.py), so two observers report the same new addresses for one
// change: written without words, so they read alike in every language;
// every boundary ASCII-only, so an address flush against CJK text is
// found; compared by host, so a new path on a host already named is not
// new.
const (
	// MaxNewAddresses bounds the addresses a change lists; the count
	// beside the list is not bounded.
	MaxNewAddresses = 50
	// maxScanRunes bounds how much of one text is searched for addresses.
	maxScanRunes = 200_000
	// window bounds the text one match attempt reads: longer than the
	// longest address any pattern can match plus the one or two
	// characters after it that its end condition reads.
	window = 1024
)

// pattern is one kind of address. RE2 has no look-around, so the
// condition on the character before a match is checked by hand (before),
// and the condition after it is a consumed alternative at the end of re
// (a class of one character, or the end of the text), outside the groups
// that are read. re is anchored and tried only where before allows, which
// is also where HISTOR's pattern can start: a match begins only at the
// start of a run, so the search stays linear.
type pattern struct {
	re     *regexp.Regexp
	before *class // a match may not follow such a rune
	start  *class // a match can begin only with such a rune
	// Every match begins with 1 to leadMax runes of lead, then sep, then a
	// rune of next (nil: any): checked by hand before re runs, since most
	// starts fail there and re's matcher costs microseconds a try.
	lead    *class
	leadMax int
	sep     string
	next    *class
	group   int // the submatch that is the match proper
}

// class is a set of runes: ASCII ones by table, and with digits every
// Unicode decimal digit (Python's \d).
type class struct {
	ascii  [utf8.RuneSelf]bool
	digits bool
}

func (c *class) has(r rune) bool {
	if r < utf8.RuneSelf {
		return r >= 0 && c.ascii[r]
	}
	return c.digits && unicode.Is(unicode.Nd, r)
}

// alnumAnd is the ASCII letters and digits and the runes of set.
func alnumAnd(set string) *class {
	c := &class{}
	for r := range rune(utf8.RuneSelf) {
		c.ascii[r] = r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune(set, r)
	}
	return c
}

// digitsAnd is every decimal digit and the runes of set.
func digitsAnd(set string) *class {
	c := &class{digits: true}
	for r := range rune(utf8.RuneSelf) {
		c.ascii[r] = r >= '0' && r <= '9' || strings.ContainsRune(set, r)
	}
	return c
}

var (
	urlPattern = pattern{
		re: regexp.MustCompile(`^([A-Za-z][A-Za-z0-9+.-]{0,30}://(?:[A-Za-z0-9._~%!$&'()*+,;=:-]{0,256}@)?` +
			`(\[[0-9A-Fa-f:.]{2,64}\]|[A-Za-z0-9](?:[A-Za-z0-9.-]{0,252}[A-Za-z0-9])?))`),
		before:  alnumAnd("+.-"),
		start:   alnumAnd(""),    // a letter, or a digit the regexp refuses
		lead:    alnumAnd("+.-"), // the scheme
		leadMax: 31,
		sep:     "://",
		group:   1,
	}
	emailPattern = pattern{
		re:      regexp.MustCompile(`^([A-Za-z0-9._%+-]{1,64}@((?:[A-Za-z0-9-]{1,63}\.){1,10}[A-Za-z]{2,24}))(?:[^A-Za-z0-9-]|$)`),
		before:  alnumAnd("._%+-"),
		start:   alnumAnd("._%+-"),
		lead:    alnumAnd("._%+-"), // the local part
		leadMax: 64,
		sep:     "@",
		next:    alnumAnd("-"),
		group:   1,
	}
	domainPattern = pattern{
		re:      regexp.MustCompile(`^((?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.){1,10}([A-Za-z]{2,24}))(?:[^A-Za-z0-9_-]|$)`),
		before:  alnumAnd(`@/.:_%+\-`),
		start:   alnumAnd(""),
		lead:    alnumAnd("-"), // the first label
		leadMax: 63,
		sep:     ".",
		next:    alnumAnd(""), // a label or the top-level domain
		group:   1,
	}
	// Python's \d is any Unicode decimal digit, so \p{Nd} here.
	ipv4Pattern = pattern{
		re: regexp.MustCompile(`^((?:25[0-5]|2[0-4]\p{Nd}|1?\p{Nd}?\p{Nd})(?:\.(?:25[0-5]|2[0-4]\p{Nd}|1?\p{Nd}?\p{Nd})){3})` +
			`(?:$|[^.\p{Nd}]|\.(?:$|[^\p{Nd}]))`),
		before:  digitsAnd("."),
		start:   digitsAnd(""),
		lead:    digitsAnd(""), // the first octet
		leadMax: 3,
		sep:     ".",
		next:    digitsAnd(""),
		group:   1,
	}
)

// fileExtensions: a bare "name.ext" is far more often a file than a host,
// when a single label precedes the extension ("result.json"); with more
// labels ("upload.example.pl") it is a host.
var fileExtensions = func() map[string]bool {
	m := map[string]bool{}
	for _, e := range strings.Fields(`json jsonl txt csv tsv md rst pdf png jpg jpeg gif svg webp ico yaml yml xml
		html htm log py js mjs cjs ts tsx jsx sh bash zsh ps1 bat exe dll so zip tar gz tgz bz2 xz 7z rar docx doc
		xlsx xls pptx ppt mp3 mp4 wav avi mov mkv env toml ini cfg conf lock sql db sqlite parquet ipynb rb go rs
		java jar kt swift c h cpp hpp cs php pl css scss less vue svelte wasm bin dat bak tmp pem crt key pub`) {
		m[e] = true
	}
	return m
}()

// each calls fn with the submatch indexes of every match of p in text,
// left to right and without overlap, as Python's finditer would find them.
func (p pattern) each(text string, fn func(m []int)) {
	// A match begins at most reach bytes before a separator, so the
	// search leaps to there from wherever the next separator is farther.
	reach := p.leadMax * utf8.UTFMax
	sep := -1 // the first separator at or after i, once searched
	for i := 0; i < len(text); {
		if sep < i {
			j := strings.Index(text[i:], p.sep)
			if j < 0 {
				return
			}
			sep = i + j
		}
		if sep-i > reach {
			for i = sep - reach; !utf8.RuneStart(text[i]); i++ {
			}
		}
		if !p.startsAt(text, i) {
			i = nextRune(text, i)
			continue
		}
		m := p.re.FindStringSubmatchIndex(text[i:min(len(text), i+window)])
		if m == nil {
			i = nextRune(text, i)
			continue
		}
		for k := range m {
			if m[k] >= 0 {
				m[k] += i
			}
		}
		fn(m)
		i = m[2*p.group+1]
	}
}

// startsAt says a match of p may begin at byte i of text: the rune there
// may begin one, the rune before it (if any) may precede one, and the
// lead, separator and next rune every match begins with follow.
func (p pattern) startsAt(text string, i int) bool {
	if r, _ := utf8.DecodeRuneInString(text[i:]); !p.start.has(r) {
		return false
	}
	if i > 0 {
		if r, _ := utf8.DecodeLastRuneInString(text[:i]); p.before.has(r) {
			return false
		}
	}
	n := 0
	for i < len(text) && n < p.leadMax {
		r, size := utf8.DecodeRuneInString(text[i:])
		if !p.lead.has(r) {
			break
		}
		i += size
		n++
	}
	if n == 0 || !strings.HasPrefix(text[i:], p.sep) {
		return false
	}
	if p.next == nil {
		return true
	}
	r, _ := utf8.DecodeRuneInString(text[i+len(p.sep):])
	return p.next.has(r)
}

func nextRune(s string, i int) int {
	_, n := utf8.DecodeRuneInString(s[i:])
	return i + n
}

// replace is text with every match of p replaced by one space (Python's
// sub), so a later pattern cannot read a part of it again.
func (p pattern) replace(text string) string {
	var b strings.Builder
	last := 0
	p.each(text, func(m []int) {
		start, end := m[2*p.group], m[2*p.group+1]
		b.WriteString(text[last:start])
		b.WriteByte(' ')
		last = end
	})
	if last == 0 {
		return text
	}
	b.WriteString(text[last:])
	return b.String()
}

// addressesIn adds to found every address in text: URL hosts first (a
// host inside a URL counts once, and URL userinfo is never read as an
// e-mail address), then e-mail addresses, then bare domains and IPv4
// addresses in what is left.
func addressesIn(text string, found map[string]bool) {
	text = clipRunes(text, maxScanRunes)
	urlPattern.each(text, func(m []int) {
		if host := strings.ToLower(strings.Trim(text[m[4]:m[5]], ".-")); host != "" {
			found[host] = true
		}
	})
	rest := urlPattern.replace(text)
	emailPattern.each(rest, func(m []int) { found[strings.ToLower(rest[m[2]:m[3]])] = true })
	rest = emailPattern.replace(rest)
	domainPattern.each(rest, func(m []int) {
		name, ext := strings.ToLower(rest[m[2]:m[3]]), strings.ToLower(rest[m[4]:m[5]])
		if fileExtensions[ext] && strings.Count(name, ".") == 1 {
			return
		}
		found[name] = true
	})
	ipv4Pattern.each(rest, func(m []int) { found[rest[m[2]:m[3]]] = true })
}

func clipRunes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for i := range s {
		if n == 0 {
			return s[:i]
		}
		n--
	}
	return s
}

// toolTexts calls fn with each text of tools an address can hide in, as
// MTL/1 normalises a tool: the name, the description ("" unless a
// string), and every key and string value of inputSchema and outputSchema
// when they are objects, each on its own (never serialised JSON, whose
// escapes would glue a letter onto the address that follows).
func toolTexts(tools map[string]map[string]any, fn func(string)) {
	for name, t := range tools {
		fn(name)
		fn(text(t, "description"))
		for _, f := range []string{"inputSchema", "outputSchema"} {
			if m, ok := t[f].(map[string]any); ok {
				schemaStrings(m, fn)
			}
		}
	}
}

func schemaStrings(v any, fn func(string)) {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			fn(k)
			schemaStrings(e, fn)
		}
	case []any:
		for _, e := range v {
			schemaStrings(e, fn)
		}
	case string:
		fn(v)
	}
}

func allAddresses(tools map[string]map[string]any) map[string]bool {
	found := map[string]bool{}
	toolTexts(tools, func(s string) { addressesIn(s, found) })
	return found
}

// newAddresses is the hosts, e-mail addresses and IPv4 addresses after
// mentions and before did not, sorted, at most MaxNewAddresses of them,
// and how many there are in all.
func newAddresses(before, after map[string]map[string]any) ([]string, int) {
	old := allAddresses(before)
	var fresh []string
	for a := range allAddresses(after) {
		if !old[a] {
			fresh = append(fresh, a)
		}
	}
	sort.Strings(fresh)
	return fresh[:min(len(fresh), MaxNewAddresses)], len(fresh)
}
