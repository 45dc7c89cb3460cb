package node

import (
	"fmt"
	"strings"
)

// uintParam is one unsigned decimal query parameter.
type uintParam struct {
	name    string
	value   uint64
	present bool
}

// paramError is a query parameter the API refuses; it becomes a 400.
type paramError struct {
	name, why string
}

func (e *paramError) Error() string { return fmt.Sprintf("%s %s", e.name, e.why) }

// readUints fills params from a raw query string. Values must be canonical
// decimals (no sign, no leading zeros, at most 2^64-1) and a parameter may
// appear once; anything else is refused so that one request has one meaning.
// Unknown parameters are ignored, as HISTOR ignores them.
func readUints(raw string, params ...*uintParam) error {
	for raw != "" {
		var pair string
		pair, raw, _ = strings.Cut(raw, "&")
		key, val, _ := strings.Cut(pair, "=")
		for _, p := range params {
			if key != p.name {
				continue
			}
			if p.present {
				return &paramError{p.name, "is given more than once"}
			}
			n, ok := parseCanonicalUint(val)
			if !ok {
				return &paramError{p.name, "must be a decimal integer without sign or leading zeros"}
			}
			p.value, p.present = n, true
		}
	}
	return nil
}

// require reports the first missing parameter.
func require(params ...*uintParam) error {
	for _, p := range params {
		if !p.present {
			return &paramError{p.name, "is required"}
		}
	}
	return nil
}

// parseCanonicalUint parses "0" or a decimal without leading zeros that fits
// a uint64.
func parseCanonicalUint(s string) (uint64, bool) {
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
