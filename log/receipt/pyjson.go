package receipt

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Separators are json.dumps' item and key separators.
type Separators struct{ Item, Key string }

var (
	// Compact is separators=(",", ":").
	Compact = Separators{",", ":"}
	// PyDefault is json.dumps' default without indent: (", ", ": ").
	PyDefault = Separators{", ", ": "}
)

// PyJSON writes v as Python's json.dumps(v, sort_keys=True,
// ensure_ascii=False, separators=sep) writes the value json.loads makes of
// it. v is built of nil, bool, string, json.Number, int, int64, uint64,
// float64, []any and map[string]any; a float64 (and a json.Number with a
// fraction or exponent) is a Python float, written as repr writes it, so
// 0.0 stays "0.0" where Go would write 0.
func PyJSON(v any, sep Separators) ([]byte, error) {
	return appendPy(nil, v, sep)
}

func appendPy(b []byte, v any, sep Separators) ([]byte, error) {
	switch x := v.(type) {
	case nil:
		return append(b, "null"...), nil
	case bool:
		return strconv.AppendBool(b, x), nil
	case string:
		return appendPyString(b, x), nil
	case int:
		return strconv.AppendInt(b, int64(x), 10), nil
	case int64:
		return strconv.AppendInt(b, x, 10), nil
	case uint64:
		return strconv.AppendUint(b, x, 10), nil
	case float64:
		return appendPyFloat(b, x)
	case json.Number:
		return appendPyNumber(b, string(x))
	case []any:
		return appendPyArray(b, x, sep)
	case map[string]any:
		return appendPyObject(b, x, sep)
	}
	return nil, fmt.Errorf("encoding as Python JSON: unsupported %T", v)
}

func appendPyArray(b []byte, a []any, sep Separators) ([]byte, error) {
	b = append(b, '[')
	for i, e := range a {
		if i > 0 {
			b = append(b, sep.Item...)
		}
		var err error
		if b, err = appendPy(b, e, sep); err != nil {
			return nil, err
		}
	}
	return append(b, ']'), nil
}

// appendPyObject sorts keys as Python sorts str, by code point, which is
// the byte order of their UTF-8.
func appendPyObject(b []byte, m map[string]any, sep Separators) ([]byte, error) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, sep.Item...)
		}
		b = appendPyString(b, k)
		b = append(b, sep.Key...)
		var err error
		if b, err = appendPy(b, m[k], sep); err != nil {
			return nil, err
		}
	}
	return append(b, '}'), nil
}

// appendPyString escapes as json.dumps with ensure_ascii=False: the quote,
// the backslash and the C0 controls only, with \uXXXX in lowercase hex.
func appendPyString(b []byte, s string) []byte {
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"':
			b = append(b, `\"`...)
		case c == '\\':
			b = append(b, `\\`...)
		case c == '\n':
			b = append(b, `\n`...)
		case c == '\r':
			b = append(b, `\r`...)
		case c == '\t':
			b = append(b, `\t`...)
		case c == '\b':
			b = append(b, `\b`...)
		case c == '\f':
			b = append(b, `\f`...)
		case c < 0x20:
			b = append(b, fmt.Sprintf(`\u%04x`, c)...)
		default:
			b = append(b, c)
		}
	}
	return append(b, '"')
}

// appendPyNumber writes a JSON number literal as Python reads and writes
// it back: an integer literal stays as it is (Python's ints are exact), any
// other is a float.
func appendPyNumber(b []byte, lit string) ([]byte, error) {
	if !strings.ContainsAny(lit, ".eE") {
		if lit == "-0" {
			lit = "0"
		}
		return append(b, lit...), nil
	}
	f, err := strconv.ParseFloat(lit, 64)
	if err != nil && !math.IsInf(f, 0) {
		return nil, fmt.Errorf("encoding as Python JSON: number %q: %w", lit, err)
	}
	return appendPyFloat(b, f)
}

// appendPyFloat writes float.__repr__: the shortest digits that read back,
// positional when the decimal exponent is in [-4, 16), else d.ddde±XX.
func appendPyFloat(b []byte, f float64) ([]byte, error) {
	switch {
	case math.IsNaN(f):
		return append(b, "NaN"...), nil
	case math.IsInf(f, 1):
		return append(b, "Infinity"...), nil
	case math.IsInf(f, -1):
		return append(b, "-Infinity"...), nil
	}
	e := strconv.FormatFloat(f, 'e', -1, 64) // [-]d[.ddd]e±XX
	if e[0] == '-' {
		b, e = append(b, '-'), e[1:]
	}
	mant, expStr, _ := strings.Cut(e, "e")
	exp, _ := strconv.Atoi(expStr)
	digits := strings.Replace(mant, ".", "", 1)
	if exp < -4 || exp >= 16 {
		b = append(b, mant...)
		sign := byte('+')
		if exp < 0 {
			sign, exp = '-', -exp
		}
		return append(append(append(b, 'e'), sign), fmt.Sprintf("%02d", exp)...), nil
	}
	point := exp + 1 // digits before the decimal point
	switch {
	case point <= 0:
		b = append(append(b, "0."...), strings.Repeat("0", -point)...)
		return append(b, digits...), nil
	case point >= len(digits):
		b = append(append(b, digits...), strings.Repeat("0", point-len(digits))...)
		return append(b, ".0"...), nil
	}
	return append(append(append(b, digits[:point]...), '.'), digits[point:]...), nil
}
