package httpx

import (
	"fmt"
	"net/url"
	"strings"
	"unicode/utf8"
)

// Uint is one unsigned decimal query parameter.
type Uint struct {
	Name    string
	Value   uint64
	Present bool
}

// ParamError is a query parameter the API refuses; it becomes a 400.
type ParamError struct {
	Name, Why string
}

func (e *ParamError) Error() string { return fmt.Sprintf("%s %s", e.Name, e.Why) }

// ReadUints fills params from a raw query string. Values must be canonical
// decimals (no sign, no leading zeros, at most 2^64-1) and a parameter may
// appear once; anything else is refused so that one request has one meaning.
// Unknown parameters are ignored, as HISTOR ignores them.
func ReadUints(raw string, params ...*Uint) error {
	return eachPair(raw, func(key, val string) error {
		for _, p := range params {
			if key != p.Name {
				continue
			}
			if p.Present {
				return &ParamError{p.Name, "is given more than once"}
			}
			n, ok := ParseCanonicalUint(val)
			if !ok {
				return &ParamError{p.Name, "must be a decimal integer without sign or leading zeros"}
			}
			p.Value, p.Present = n, true
		}
		return nil
	})
}

// eachPair calls fn with each key=value pair of a raw query, in order, as
// sent (not unescaped), until fn fails.
func eachPair(raw string, fn func(key, val string) error) error {
	for raw != "" {
		var pair string
		pair, raw, _ = strings.Cut(raw, "&")
		key, val, _ := strings.Cut(pair, "=")
		if err := fn(key, val); err != nil {
			return err
		}
	}
	return nil
}

// Require reports the first missing parameter.
func Require(params ...*Uint) error {
	for _, p := range params {
		if !p.Present {
			return &ParamError{p.Name, "is required"}
		}
	}
	return nil
}

// ParseCanonicalUint parses "0" or a decimal without leading zeros that fits
// a uint64.
func ParseCanonicalUint(s string) (uint64, bool) {
	if s == "" || len(s) > 20 || (len(s) > 1 && s[0] == '0') {
		return 0, false
	}
	var n uint64
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		d := uint64(c - '0')
		if n > (^uint64(0)-d)/10 {
			return 0, false
		}
		n = n*10 + d
	}
	return n, true
}

// String is one text query parameter.
type String struct {
	Name    string
	Value   string
	Present bool
}

// ReadStrings fills params from a raw query string, decoding each value as
// a form value ("+" is a space). A parameter given twice is refused, as
// ReadUints refuses it; unknown ones are ignored.
func ReadStrings(raw string, params ...*String) error {
	return eachPair(raw, func(key, val string) error {
		for _, p := range params {
			if key != p.Name {
				continue
			}
			if p.Present {
				return &ParamError{p.Name, "is given more than once"}
			}
			v, err := url.QueryUnescape(val)
			if err != nil || !utf8.ValidString(v) {
				return &ParamError{p.Name, "is not valid percent-encoded UTF-8"}
			}
			p.Value, p.Present = v, true
		}
		return nil
	})
}
