package scan

import (
	"math"
	"regexp"
	"strings"
	"unicode/utf8"
)

// hit is one regular-expression match handed to a guard: the text it was found
// in (folded, or raw for raw rules), its byte span and the surface.
type hit struct {
	text       string
	start, end int
	surface    Surface
}

func (h hit) match() string { return h.text[h.start:h.end] }

// A guard inspects a match in context and reports whether to drop it because
// the match is not the thing its rule looks for (a promise rather than a
// request, a citation rather than an instruction). Guards are named in the
// published rules, so they are part of the digest; a new guard or a changed
// meaning is a new pattern set version.
type guard func(h hit) (drop bool)

var guards = map[string]guard{
	"polarity":           guardPolarity,
	"mention":            guardMention,
	"detection":          guardDetection,
	"autonomy":           guardAutonomy,
	"navigation":         guardNavigation,
	"zeroWidth":          guardZeroWidth,
	"blob":               guardBlob,
	"payload":            guardPayload,
	"uri":                guardURI,
	"identifierFragment": guardIdentifierFragment,
	"publicKeyPath":      guardPublicKeyPath,
	"harvestTarget":      guardHarvestTarget,
}

// contextSpan bounds how far a guard reads around a match: a negation three
// sentences away is not about this noun.
const contextSpan = 120

// clause returns the text either side of the match up to the nearest clause
// end (". ", ";", "!", "?", a newline) within contextSpan bytes. A '.' that is
// not followed by a space is part of a path or a name (".env", "a.b"), not a
// sentence end.
func clause(h hit) (before, after string) {
	a := h.start
	for floor := max(0, h.start-contextSpan); a > floor && !clauseStop(h.text, a-1); a-- {
	}
	b := h.end
	for ceil := min(len(h.text), h.end+contextSpan); b < ceil && !clauseStop(h.text, b); b++ {
	}
	return h.text[a:h.start], h.text[h.end:b]
}

func clauseStop(s string, i int) bool {
	switch s[i] {
	case ';', '!', '?', '\n':
		return true
	case '.':
		return i+1 == len(s) || s[i+1] == ' '
	}
	return false
}

var refusal = regexp.MustCompile(`(?i)\b(?:never|not|no|non|without|nor|refus\w{0,8}|forbid\w{0,6}|prohibit\w{0,6}|exclud\w{0,6}|reject\w{0,6}|don't|doesn't|won't|cannot|can't|avoid\w{0,3})\b`)

// guardPolarity drops a noun inside a refusal: "never send a private key" is a
// promise, not a request. In the 2026-08 field survey this one distinction
// accounted for most blocking hits.
func guardPolarity(h hit) bool {
	if refusal.MatchString(h.match()) {
		return true
	}
	before, after := clause(h)
	return refusal.MatchString(before) || refusal.MatchString(after)
}

// guardMention drops a citation: prose that quotes the phrase ("detects
// 'ignore previous instructions'"), or, on a schema surface, a match that is a
// whole string value (an enum of attack names in a security tool).
func guardMention(h hit) bool {
	if h.surface == SurfaceInputSchema || h.surface == SurfaceOutputSchema {
		return h.start == 0 && h.end == len(h.text)
	}
	return quoted(h)
}

// quoted reports a match wrapped in a short pair of quotes or backticks on the
// same line; a paragraph between two apostrophes is not a citation.
func quoted(h hit) bool {
	for _, q := range []string{`"`, "'", "`", "\u201c", "\u2018"} {
		closeQ := q
		switch q {
		case "\u201c":
			closeQ = "\u201d"
		case "\u2018":
			closeQ = "\u2019"
		}
		open := strings.LastIndex(h.text[:h.start], q)
		if open < 0 {
			continue
		}
		c := strings.Index(h.text[h.end:], closeQ)
		if c < 0 {
			continue
		}
		inner := h.text[open+len(q) : h.end+c]
		if len(inner) <= contextSpan && !strings.Contains(inner, "\n") {
			return true
		}
	}
	return false
}

var detectionCue = regexp.MustCompile(`(?i)\b(?:detect\w{0,4}|scan\w{0,4}|identif\w{0,6}|find\w{0,3}|report\w{0,4}|flag\w{0,4}|audit\w{0,4}|inspect\w{0,4}|check(?:s|ed|ing)? for|look(?:s|ed|ing)? for|leak(?:s|ed)?|redact\w{0,4}|mask\w{0,3})\b`)

// guardDetection drops a secret named as the object of detection: a secret
// scanner saying what it finds is doing its job, not asking for one.
func guardDetection(h hit) bool {
	before, _ := clause(h)
	return detectionCue.MatchString(before)
}

var (
	consentObject = regexp.MustCompile(`(?i)^ (?:first\b|beforehand\b|(?:for|to|whether|if|before)\b[^.;!?\n]{0,48}?\b(?:permission|consent|confirm\w{0,8}|approv\w{0,6}|authori[sz]\w{0,6}|go-ahead|ok(?:ay)?)\b)`)
	autonomyCue   = regexp.MustCompile(`(?i)\b(?:keep|keeps|continue|continues|poll\w{0,3}|retry|retries|until (?:done|complete|finished|ready)|repeatedly|periodically)\b`)
)

// guardAutonomy drops "without asking the user" when it tells the model to
// keep working on its own ("keep polling until done without asking the user").
// Never for "telling"/"informing" (concealment), and never when what goes
// unasked is consent ("… without asking the user for approval").
func guardAutonomy(h hit) bool {
	if !strings.Contains(h.match(), "asking") {
		return false
	}
	if consentObject.MatchString(h.text[h.end:min(len(h.text), h.end+64)]) {
		return false
	}
	a := h.start
	for floor := max(0, h.start-48); a > floor && !strings.ContainsRune(".;,!?\n", rune(h.text[a-1])); a-- {
	}
	return autonomyCue.MatchString(h.text[a:h.start])
}

var personWord = regexp.MustCompile(`(?i)\b(?:user|users|person|people|customer|customers|client|visitor|human|someone|reader|buyer|shopper|guest|caller|member|subscriber)\b`)

// guardNavigation drops "send the user to https://…": a person redirected,
// not data copied out. Only the object (before the last " to ") is read, so a
// destination host spelled user.example.net does not excuse itself.
func guardNavigation(h hit) bool {
	m := h.match()
	if i := strings.LastIndex(m, " to "); i >= 0 {
		m = m[:i]
	}
	return personWord.MatchString(m)
}

// guardZeroWidth drops the standard, visible uses of otherwise hidden
// characters: a joiner control (U+200C/U+200D) next to a script that needs it
// (Persian, Arabic, Indic), a U+200D between two pictographs (an emoji
// sequence), and tag characters inside a subdivision flag.
func guardZeroWidth(h hit) bool {
	r, _ := utf8.DecodeRuneInString(h.match())
	prev, _ := utf8.DecodeLastRuneInString(h.text[:h.start])
	next, _ := utf8.DecodeRuneInString(h.text[h.end:])
	switch {
	case r >= 0xE0020 && r <= 0xE007F:
		return inFlag(h.text[:h.start])
	case r == 0x200C || r == 0x200D:
		if needsJoiner(prev) || needsJoiner(next) {
			return true
		}
		return r == 0x200D && pictograph(skipVS(h.text[:h.start], true)) && pictograph(skipVS(h.text[h.end:], false))
	}
	return false
}

// needsJoiner: Arabic, Persian and Indic scripts spell words with joiner
// controls (the Persian plural ‌ها is written with a ZWNJ).
func needsJoiner(r rune) bool {
	return (r >= 0x0600 && r <= 0x06FF) || (r >= 0x0750 && r <= 0x077F) || (r >= 0x08A0 && r <= 0x08FF) ||
		(r >= 0x0900 && r <= 0x0DFF) || (r >= 0xFB50 && r <= 0xFDFF) || (r >= 0xFE70 && r <= 0xFEFE)
}

// pictograph approximates Extended_Pictographic (which Go's unicode tables do
// not carry) by the emoji blocks.
func pictograph(r rune) bool {
	return (r >= 0x1F000 && r <= 0x1FAFF) || (r >= 0x2600 && r <= 0x27BF) || (r >= 0x2B00 && r <= 0x2BFF) || r == 0x2764
}

// skipVS returns the rune adjacent to the cut, stepping over emoji variation
// selectors (U+FE0F) and skin-tone modifiers.
func skipVS(s string, last bool) rune {
	for i := 0; i < 4 && s != ""; i++ {
		var r rune
		var n int
		if last {
			r, n = utf8.DecodeLastRuneInString(s)
			s = s[:len(s)-n]
		} else {
			r, n = utf8.DecodeRuneInString(s)
			s = s[n:]
		}
		if r != 0xFE0F && !(r >= 0x1F3FB && r <= 0x1F3FF) {
			return r
		}
	}
	return utf8.RuneError
}

// inFlag reports whether the text before a tag character is a run of tag
// characters opened by U+1F3F4 (a subdivision flag such as Scotland's).
func inFlag(before string) bool {
	for i := 0; i < 8 && before != ""; i++ {
		r, n := utf8.DecodeLastRuneInString(before)
		before = before[:len(before)-n]
		switch {
		case r == 0x1F3F4:
			return true
		case r >= 0xE0020 && r <= 0xE007F:
			continue
		default:
			return false
		}
	}
	return false
}

var schemaPointer = regexp.MustCompile(`properties|items|definitions|anyof|allof|oneof|\$defs|additionalproperties`)

// blobMinEntropy is the floor, in bits per character, for a run of base64
// characters to count as encoded data. Random base64 folded to lower case
// carries about 5.2; a 120-character sample of it measures about 5.0. Paths,
// identifiers and JSON Schema pointers stay near 4.
const blobMinEntropy = 4.4

// guardBlob drops base64-alphabet runs that are structure, not payload: a
// JSON Schema pointer ($ref paths are '/'-separated words) or any low-entropy
// run.
func guardBlob(h hit) bool {
	m := strings.ToLower(h.match())
	return schemaPointer.MatchString(m) || entropy(m) < blobMinEntropy
}

func entropy(s string) float64 {
	var counts [256]int
	for i := 0; i < len(s); i++ {
		counts[s[i]]++
	}
	n := float64(len(s))
	h := 0.0
	for _, c := range counts {
		if c > 0 {
			p := float64(c) / n
			h -= p * math.Log2(p)
		}
	}
	return h
}

// guardPayload drops a data: URL with no payload behind it: documentation of
// the format ("data:image/png;base64,...") rather than an embedded document.
func guardPayload(h hit) bool {
	n := 0
	for i := h.end; i < len(h.text) && isB64(h.text[i]); i++ {
		n++
	}
	return n < 32
}

func isB64(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '+' || c == '/' || c == '='
}

// guardURI keeps javascript: only where it is a URI: a scheme is followed at
// once by its payload. Followed by a space, punctuation, the end, or
// non-ASCII prose, it is a language name used as a label ("JavaScript: npm
// install …", "Examples — JavaScript: https://…").
func guardURI(h hit) bool {
	if h.end >= len(h.text) {
		return true
	}
	c := h.text[h.end]
	return c <= ' ' || c > '~' || strings.IndexByte("\"'`)],;.", c) >= 0
}

// guardIdentifierFragment drops a match that is part of a longer identifier or
// word: "funds" inside "refunds", "mnemonic" inside "bip39-mnemonic-checksum".
// A field genuinely called seed_phrase still matches: the match is the whole
// token. A '.' or '-' counts as part of a token only between word characters,
// so a sentence-final "private key." is not a fragment.
func guardIdentifierFragment(h hit) bool {
	return wordBefore(h.text, h.start) || wordAfter(h.text, h.end)
}

func wordBefore(s string, i int) bool {
	if i == 0 {
		return false
	}
	r, n := utf8.DecodeLastRuneInString(s[:i])
	if isWordRune(r) {
		return true
	}
	if (r == '.' || r == '-') && i-n > 0 {
		p, _ := utf8.DecodeLastRuneInString(s[:i-n])
		return isWordRune(p)
	}
	return false
}

func wordAfter(s string, i int) bool {
	if i >= len(s) {
		return false
	}
	r, n := utf8.DecodeRuneInString(s[i:])
	if isWordRune(r) {
		return true
	}
	if (r == '.' || r == '-') && i+n < len(s) {
		p, _ := utf8.DecodeRuneInString(s[i+n:])
		return isWordRune(p)
	}
	return false
}

func isWordRune(r rune) bool {
	return r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r > 0x7F && r != utf8.RuneError
}

var publicKeyFile = regexp.MustCompile(`(?i)^/?[\w-]{0,64}\.pub\b|authorized_keys|known_hosts`)

// guardPublicKeyPath drops a path to public material: id_rsa.pub,
// authorized_keys and known_hosts are handed out on purpose.
func guardPublicKeyPath(h hit) bool {
	m := h.match()
	if strings.HasSuffix(m, ".pub") || strings.Contains(m, "authorized_keys") || strings.Contains(m, "known_hosts") {
		return true
	}
	return publicKeyFile.MatchString(h.text[h.end:min(len(h.text), h.end+80)])
}

var (
	harvestOwner    = regexp.MustCompile(`(?i)\b(?:the user'?s?|user'?s|your|their|his|her|its|my|from|out of|stored|saved|existing|all)\b`)
	harvestLocation = regexp.MustCompile(`[~/\\]|\.env\b|environment`)
)

// guardHarvestTarget keeps a harvest instruction only if it says whose secret
// or where it lives ("read the user's api key from .env"). Without either it
// reads as a credential being issued ("obtain an anonymous api key").
func guardHarvestTarget(h hit) bool {
	m := h.match()
	return !harvestOwner.MatchString(m) && !harvestLocation.MatchString(m)
}
