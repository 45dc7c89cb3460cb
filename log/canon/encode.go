package canon

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"unicode/utf8"
)

// Canonicalize strictly parses b with DefaultLimits and returns its RFC 8785
// form.
func Canonicalize(b []byte) ([]byte, error) {
	return CanonicalizeWith(b, DefaultLimits)
}

// CanonicalizeWith is Canonicalize with explicit bounds.
func CanonicalizeWith(b []byte, lim Limits) ([]byte, error) {
	v, err := ParseWith(b, lim)
	if err != nil {
		return nil, err
	}
	return Encode(v)
}

// Marshal encodes v with encoding/json (HTML escaping off, so the bytes stay
// what the caller wrote) and canonicalizes the result, so a Go value is held
// to exactly the rules a received document is.
func Marshal(v any) ([]byte, error) {
	b, err := MarshalPlain(v)
	if err != nil {
		return nil, err
	}
	return Canonicalize(b)
}

// MarshalPlain is json.Marshal without HTML escaping: the bytes of every
// string stay what the caller wrote (a description quoted back reads as its
// server wrote it, "<" and "&" included). It is not canonical: use Marshal
// for bytes that are signed or hashed.
func MarshalPlain(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("encoding json: %w", err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// MarshalPlainIndent is MarshalPlain indented for a reader, each level by indent, and ending
// in a newline: what a command prints.
func MarshalPlainIndent(v any, indent string) ([]byte, error) {
	b, err := MarshalPlain(v)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := json.Indent(&buf, b, "", indent); err != nil {
		return nil, fmt.Errorf("indenting json: %w", err)
	}
	buf.WriteByte('\n')
	return buf.Bytes(), nil
}

// Encode writes a tree of the types Parse returns (map[string]any, []any,
// string, bool, nil, int64; int is also accepted) as RFC 8785 bytes. It
// refuses anything else, integers beyond ±(2^53−1) and invalid UTF-8, so
// its output always re-parses to the same tree.
func Encode(v any) ([]byte, error) {
	return appendValue(nil, v)
}

// Append is Encode writing after the bytes of dst: it returns dst with v's
// RFC 8785 bytes appended, or nil and the error Encode would give. dst's
// spare capacity may be written even when it fails.
func Append(dst []byte, v any) ([]byte, error) {
	return appendValue(dst, v)
}

func appendValue(out []byte, v any) ([]byte, error) {
	switch x := v.(type) {
	case nil:
		return append(out, "null"...), nil
	case bool:
		return strconv.AppendBool(out, x), nil
	case int64:
		return appendInt(out, x)
	case int:
		return appendInt(out, int64(x))
	case string:
		return appendString(out, x)
	case []any:
		return appendArray(out, x)
	case map[string]any:
		return appendObject(out, x)
	case RefusedNumber:
		return nil, x.Err
	default:
		return nil, &Error{Code: CodeSyntax, Reason: fmt.Sprintf("cannot encode a value of type %T", v)}
	}
}

func appendInt(out []byte, n int64) ([]byte, error) {
	if n > MaxSafeInteger || n < -MaxSafeInteger {
		return nil, &Error{Code: CodeOutOfRange, Reason: fmt.Sprintf("integer %d outside ±(2^53−1)", n)}
	}
	return strconv.AppendInt(out, n, 10), nil
}

func appendArray(out []byte, a []any) ([]byte, error) {
	out = append(out, '[')
	for i, e := range a {
		if i > 0 {
			out = append(out, ',')
		}
		var err error
		if out, err = appendValue(out, e); err != nil {
			return nil, err
		}
	}
	return append(out, ']'), nil
}

func appendObject(out []byte, m map[string]any) ([]byte, error) {
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	slices.SortFunc(names, CompareUTF16)
	out = append(out, '{')
	for i, k := range names {
		if i > 0 {
			out = append(out, ',')
		}
		var err error
		if out, err = appendString(out, k); err != nil {
			return nil, err
		}
		out = append(out, ':')
		if out, err = appendValue(out, m[k]); err != nil {
			return nil, err
		}
	}
	return append(out, '}'), nil
}

// appendString escapes only what RFC 8785 §3.2.2.2 requires: the quote, the
// backslash and C0 controls (short forms where JSON has them, else \u00xx in
// lowercase). Everything else, U+007F and U+2028 included, is written as is.
func appendString(out []byte, s string) ([]byte, error) {
	if !utf8.ValidString(s) {
		return nil, &Error{Code: CodeUnicode, Reason: "string is not valid UTF-8"}
	}
	out = append(out, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			out = append(out, '\\', c)
		case c >= 0x20:
			out = append(out, c)
		case c == '\b':
			out = append(out, '\\', 'b')
		case c == '\t':
			out = append(out, '\\', 't')
		case c == '\n':
			out = append(out, '\\', 'n')
		case c == '\f':
			out = append(out, '\\', 'f')
		case c == '\r':
			out = append(out, '\\', 'r')
		default:
			const hex = "0123456789abcdef"
			out = append(out, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		}
	}
	return append(out, '"'), nil
}

// CompareUTF16 orders two valid UTF-8 strings as RFC 8785 §3.2.3 orders
// member names: as sequences of UTF-16 code units. It differs from code
// point (and byte) order only when an astral character meets a BMP character
// at or above U+E000: the astral one's high surrogate (U+D800..U+DBFF) sorts
// first.
func CompareUTF16(a, b string) int {
	for a != "" && b != "" {
		ra, na := utf8.DecodeRuneInString(a)
		rb, nb := utf8.DecodeRuneInString(b)
		if ra != rb {
			ua, ub := firstUnit(ra), firstUnit(rb)
			if ua != ub {
				return cmpRune(ua, ub)
			}
			// Both astral with the same high surrogate: low surrogates
			// follow code point order.
			return cmpRune(ra, rb)
		}
		a, b = a[na:], b[nb:]
	}
	return len(a) - len(b)
}

func firstUnit(r rune) rune {
	if r < 0x10000 {
		return r
	}
	return 0xD800 + (r-0x10000)>>10
}

func cmpRune(a, b rune) int {
	if a < b {
		return -1
	}
	return 1
}
