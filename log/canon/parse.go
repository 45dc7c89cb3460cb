package canon

import (
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// MaxSafeInteger is 2^53−1, the largest integer every JSON implementation
// (IEEE-754 doubles included) represents exactly.
const MaxSafeInteger = 1<<53 - 1

// Limits bounds what the parser will read.
type Limits struct {
	MaxDepth int // deepest nesting of arrays and objects; the top-level value's container is depth 1
	MaxBytes int // largest input accepted, in bytes
}

// DefaultLimits is what Parse and Canonicalize use.
var DefaultLimits = Limits{MaxDepth: 64, MaxBytes: 4 << 20}

// Parse strictly parses one JSON value with DefaultLimits. It returns
// map[string]any, []any, string, bool, nil, or int64 for numbers.
func Parse(b []byte) (any, error) {
	return ParseWith(b, DefaultLimits)
}

// ParseWith is Parse with explicit bounds.
func ParseWith(b []byte, lim Limits) (any, error) {
	return parse(b, lim, false)
}

// RefusedNumber stands in the tree ParseDeferringNumbers returns for a number
// literal canon refuses (AWR-CANON-001 or -002). Encode refuses it with Err.
type RefusedNumber struct {
	Literal string
	Err     *Error
}

// ParseDeferringNumbers is ParseWith, except that a refused number literal is
// not an error yet: it is returned as a RefusedNumber and refused only if it
// reaches Encode. MTL/1 needs this because it digests only some members of a
// tool and drops the rest, and a number in a dropped member must not stop
// the digest. Every other refusal happens at parse time as usual.
func ParseDeferringNumbers(b []byte, lim Limits) (any, error) {
	return parse(b, lim, true)
}

func parse(b []byte, lim Limits, deferNumbers bool) (any, error) {
	if len(b) > lim.MaxBytes {
		return nil, refuse(CodeLimit, lim.MaxBytes, "input of %d bytes exceeds the %d byte bound", len(b), lim.MaxBytes)
	}
	if off := invalidUTF8(b); off >= 0 {
		return nil, refuse(CodeUnicode, off, "invalid UTF-8")
	}
	p := &parser{b: b, lim: lim, deferNumbers: deferNumbers}
	p.space()
	v, err := p.value()
	if err != nil {
		return nil, err
	}
	p.space()
	if p.pos != len(p.b) {
		return nil, p.syntax("trailing data after the JSON value")
	}
	return v, nil
}

// invalidUTF8 returns the offset of the first byte that is not valid UTF-8,
// or -1. Go's decoder already refuses encoded surrogates (ED A0..BF xx), so a
// raw lone surrogate lands here too, under the same code as an escaped one.
func invalidUTF8(b []byte) int {
	for i := 0; i < len(b); {
		if b[i] < utf8.RuneSelf {
			i++
			continue
		}
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n <= 1 {
			return i
		}
		i += n
	}
	return -1
}

type parser struct {
	b            []byte
	pos          int
	depth        int
	lim          Limits
	deferNumbers bool // see ParseDeferringNumbers
}

func (p *parser) syntax(format string, args ...any) *Error {
	return refuse(CodeSyntax, p.pos, format, args...)
}

func (p *parser) space() {
	for p.pos < len(p.b) {
		switch p.b[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

func (p *parser) value() (any, error) {
	if p.pos >= len(p.b) {
		return nil, p.syntax("unexpected end of input")
	}
	switch c := p.b[p.pos]; {
	case c == '{':
		return p.object()
	case c == '[':
		return p.array()
	case c == '"':
		return p.str()
	case c == '-' || (c >= '0' && c <= '9'):
		return p.number()
	default:
		return p.literal()
	}
}

func (p *parser) literal() (any, error) {
	for _, lit := range []struct {
		text string
		val  any
	}{{"true", true}, {"false", false}, {"null", nil}} {
		if len(p.b)-p.pos >= len(lit.text) && string(p.b[p.pos:p.pos+len(lit.text)]) == lit.text {
			p.pos += len(lit.text)
			return lit.val, nil
		}
	}
	return nil, p.syntax("unexpected character %q", p.b[p.pos])
}

// enter counts one more level of nesting and refuses past the bound.
func (p *parser) enter() error {
	p.depth++
	if p.depth > p.lim.MaxDepth {
		return refuse(CodeLimit, p.pos, "nesting deeper than %d", p.lim.MaxDepth)
	}
	return nil
}

func (p *parser) object() (any, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	p.pos++ // '{'
	m := map[string]any{}
	p.space()
	if p.pos < len(p.b) && p.b[p.pos] == '}' {
		p.pos++
		p.depth--
		return m, nil
	}
	for {
		if err := p.member(m); err != nil {
			return nil, err
		}
		p.space()
		if p.pos >= len(p.b) {
			return nil, p.syntax("unterminated object")
		}
		switch p.b[p.pos] {
		case ',':
			p.pos++
			p.space()
		case '}':
			p.pos++
			p.depth--
			return m, nil
		default:
			return nil, p.syntax("expected ',' or '}' in object")
		}
	}
}

// member reads one `"name": value` pair into m, refusing a name already there.
func (p *parser) member(m map[string]any) error {
	if p.pos >= len(p.b) || p.b[p.pos] != '"' {
		return p.syntax("expected a member name")
	}
	at := p.pos
	name, err := p.str()
	if err != nil {
		return err
	}
	if _, dup := m[name]; dup {
		return refuse(CodeDuplicate, at, "duplicate member name %q", name)
	}
	p.space()
	if p.pos >= len(p.b) || p.b[p.pos] != ':' {
		return p.syntax("expected ':' after member name")
	}
	p.pos++
	p.space()
	v, err := p.value()
	if err != nil {
		return err
	}
	m[name] = v
	return nil
}

func (p *parser) array() (any, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	p.pos++ // '['
	a := []any{}
	p.space()
	if p.pos < len(p.b) && p.b[p.pos] == ']' {
		p.pos++
		p.depth--
		return a, nil
	}
	for {
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		a = append(a, v)
		p.space()
		if p.pos >= len(p.b) {
			return nil, p.syntax("unterminated array")
		}
		switch p.b[p.pos] {
		case ',':
			p.pos++
			p.space()
		case ']':
			p.pos++
			p.depth--
			return a, nil
		default:
			return nil, p.syntax("expected ',' or ']' in array")
		}
	}
}

// number reads the whole literal by the JSON grammar first, so that a
// malformed literal is a syntax error and a well-formed one with a fraction
// or exponent is refused as such, whatever value it denotes.
func (p *parser) number() (any, error) {
	start := p.pos
	if p.b[p.pos] == '-' {
		p.pos++
	}
	if !p.digits() {
		return nil, p.syntax("expected a digit")
	}
	intEnd := p.pos
	if first := start + boolInt(p.b[start] == '-'); p.b[first] == '0' && intEnd-first > 1 {
		return nil, refuse(CodeSyntax, first, "number with a leading zero")
	}
	fracOrExp, err := p.fractionExponent()
	if err != nil {
		return nil, err
	}
	var refusal *Error
	if fracOrExp {
		refusal = refuse(CodeNonInteger, start, "number %s has a fraction or exponent", p.b[start:p.pos])
	} else {
		var n int64
		if n, refusal = integer(p.b[start:intEnd], start); refusal == nil {
			return n, nil
		}
	}
	if p.deferNumbers {
		return RefusedNumber{Literal: string(p.b[start:p.pos]), Err: refusal}, nil
	}
	return nil, refusal
}

// fractionExponent consumes an optional fraction and exponent and reports
// whether either was present.
func (p *parser) fractionExponent() (bool, error) {
	seen := false
	if p.pos < len(p.b) && p.b[p.pos] == '.' {
		p.pos++
		if !p.digits() {
			return false, p.syntax("expected a digit after '.'")
		}
		seen = true
	}
	if p.pos < len(p.b) && (p.b[p.pos] == 'e' || p.b[p.pos] == 'E') {
		p.pos++
		if p.pos < len(p.b) && (p.b[p.pos] == '+' || p.b[p.pos] == '-') {
			p.pos++
		}
		if !p.digits() {
			return false, p.syntax("expected a digit in exponent")
		}
		seen = true
	}
	return seen, nil
}

func (p *parser) digits() bool {
	start := p.pos
	for p.pos < len(p.b) && p.b[p.pos] >= '0' && p.b[p.pos] <= '9' {
		p.pos++
	}
	return p.pos > start
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func integer(lit []byte, off int) (int64, *Error) {
	n, err := strconv.ParseInt(string(lit), 10, 64)
	if err != nil || n > MaxSafeInteger || n < -MaxSafeInteger {
		return 0, refuse(CodeOutOfRange, off, "integer %s outside ±(2^53−1)", lit)
	}
	return n, nil
}

func (p *parser) str() (string, error) {
	p.pos++ // opening quote
	start := p.pos
	// Fast path: no escapes.
	for p.pos < len(p.b) {
		c := p.b[p.pos]
		if c == '"' {
			s := string(p.b[start:p.pos])
			p.pos++
			return s, nil
		}
		if c == '\\' || c < 0x20 {
			break
		}
		p.pos++
	}
	return p.strSlow(p.b[start:p.pos])
}

// strSlow continues a string after the first escape or control character;
// prefix is what has been read so far.
func (p *parser) strSlow(prefix []byte) (string, error) {
	out := append([]byte(nil), prefix...)
	for p.pos < len(p.b) {
		c := p.b[p.pos]
		switch {
		case c == '"':
			p.pos++
			return string(out), nil
		case c < 0x20:
			return "", p.syntax("unescaped control character 0x%02x in string", c)
		case c == '\\':
			var err error
			if out, err = p.escape(out); err != nil {
				return "", err
			}
		default:
			out = append(out, c)
			p.pos++
		}
	}
	return "", p.syntax("unterminated string")
}

var simpleEscapes = map[byte]byte{'"': '"', '\\': '\\', '/': '/', 'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t'}

// escape decodes one backslash escape at p.pos, appending its UTF-8 to out.
func (p *parser) escape(out []byte) ([]byte, error) {
	at := p.pos
	if p.pos+1 >= len(p.b) {
		return nil, p.syntax("unterminated escape")
	}
	if c, ok := simpleEscapes[p.b[p.pos+1]]; ok {
		p.pos += 2
		return append(out, c), nil
	}
	if p.b[p.pos+1] != 'u' {
		return nil, p.syntax("invalid escape \\%c", p.b[p.pos+1])
	}
	r, err := p.hex4()
	if err != nil {
		return nil, err
	}
	switch {
	case utf16.IsSurrogate(r) && r < 0xDC00:
		lo, ok := p.lowSurrogate()
		if !ok {
			return nil, refuse(CodeUnicode, at, "lone high surrogate \\u%04x", r)
		}
		r = utf16.DecodeRune(r, lo)
	case utf16.IsSurrogate(r):
		return nil, refuse(CodeUnicode, at, "lone low surrogate \\u%04x", r)
	}
	return utf8.AppendRune(out, r), nil
}

// hex4 reads `\uXXXX` at p.pos.
func (p *parser) hex4() (rune, error) {
	if p.pos+6 > len(p.b) {
		p.pos = len(p.b)
		return 0, p.syntax("truncated \\u escape")
	}
	v, err := strconv.ParseUint(string(p.b[p.pos+2:p.pos+6]), 16, 16)
	if err != nil {
		return 0, p.syntax("invalid \\u escape")
	}
	p.pos += 6
	return rune(v), nil
}

// lowSurrogate consumes a following `\uDC00`..`\uDFFF` if there is one.
func (p *parser) lowSurrogate() (rune, bool) {
	save := p.pos
	if p.pos+1 < len(p.b) && p.b[p.pos] == '\\' && p.b[p.pos+1] == 'u' {
		if r, err := p.hex4(); err == nil && r >= 0xDC00 && r <= 0xDFFF {
			return r, true
		}
	}
	p.pos = save
	return 0, false
}

// MarshalJSON writes the literal as it was sent, so a tool set decoded with
// ParseDeferringNumbers survives encoding/json (a worker's observation on
// its way to the node) byte for byte and still reads MTL-NUM-001 there.
func (r RefusedNumber) MarshalJSON() ([]byte, error) { return []byte(r.Literal), nil }
