package diff

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/histor-observer/histor/log/canon"
)

// Bounds on a path diff.
const (
	// MaxPaths is the most path changes reported per field; the rest are
	// dropped and the field is marked Truncated.
	MaxPaths = 200
	// MaxValueBytes is the most bytes of a value quoted in a path change.
	MaxValueBytes = 1000
	// maxDepth stops a walk down a pathological tree; canon's parser
	// already bounds depth at 64, so real input never reaches it.
	maxDepth = 256
)

// PathKind says what happened at a path.
type PathKind string

// Path change kinds.
const (
	Added   PathKind = "added"
	Removed PathKind = "removed"
	Changed PathKind = "changed"
)

// PathChange is one leaf of a schema that differs. Leaves are scalars, empty
// objects and empty arrays; Before and After are their JSON text ("" when the
// side has no such path), cut at MaxValueBytes with a trailing "…".
type PathChange struct {
	Path   string // e.g. $.properties.city.description; odd keys as $['x-y']
	Kind   PathKind
	Before string
	After  string
}

// leaf is a flattened value; serial marks a leaf under a "$schema" or
// "additionalProperties" keyword.
type leaf struct {
	text   string
	serial bool
}

// Paths diffs two JSON trees (as canon parses them) leaf by leaf, in path
// order. A nil side has no paths. It reports at most MaxPaths changes and
// whether any were left out.
func Paths(before, after any) ([]PathChange, bool) {
	out, _, trunc := paths(before, after)
	return out, trunc
}

// paths also reports whether every change lies under a serialization
// keyword.
func paths(before, after any) (out []PathChange, serialOnly, truncated bool) {
	a, b := flatten(before), flatten(after)
	keys := make([]string, 0, len(a)+len(b))
	for k := range a {
		keys = append(keys, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	serialOnly = true
	for _, k := range keys {
		la, inA := a[k]
		lb, inB := b[k]
		if inA && inB && la.text == lb.text {
			continue
		}
		serialOnly = serialOnly && (!inA || la.serial) && (!inB || lb.serial)
		if len(out) == MaxPaths {
			truncated = true
			continue
		}
		out = append(out, pathChange(k, la, lb, inA, inB))
	}
	return out, serialOnly && len(out) > 0, truncated
}

func pathChange(path string, a, b leaf, inA, inB bool) PathChange {
	pc := PathChange{Path: path, Kind: Changed}
	switch {
	case !inA:
		pc.Kind = Added
	case !inB:
		pc.Kind = Removed
	}
	if inA {
		pc.Before, _ = clip(a.text, MaxValueBytes)
	}
	if inB {
		pc.After, _ = clip(b.text, MaxValueBytes)
	}
	return pc
}

func flatten(v any) map[string]leaf {
	out := map[string]leaf{}
	if v != nil {
		walk(out, v, "$", "", false, 0)
	}
	return out
}

// mapKeywords hold maps from names to schemas: a key directly under one of
// them is a property name, not a keyword, so a property called
// "additionalProperties" is not mistaken for the keyword.
var mapKeywords = map[string]bool{
	"properties": true, "patternProperties": true, "$defs": true,
	"definitions": true, "dependentSchemas": true,
}

func walk(out map[string]leaf, v any, path, parentKey string, serial bool, depth int) {
	if depth > maxDepth {
		out[path] = leaf{text: "…", serial: serial}
		return
	}
	switch x := v.(type) {
	case map[string]any:
		if len(x) == 0 {
			out[path] = leaf{text: "{}", serial: serial}
		}
		for k, c := range x {
			keyword := !mapKeywords[parentKey]
			s := serial || keyword && (k == "$schema" || k == "additionalProperties")
			name := k
			if !keyword {
				name = "" // a property name never makes its children map members
			}
			walk(out, c, path+member(k), name, s, depth+1)
		}
	case []any:
		if len(x) == 0 {
			out[path] = leaf{text: "[]", serial: serial}
		}
		for i, c := range x {
			walk(out, c, path+"["+strconv.Itoa(i)+"]", "", serial, depth+1)
		}
	default:
		out[path] = leaf{text: scalar(x), serial: serial}
	}
}

// member writes one path step: .name for identifier-like keys, and the
// RFC 9535 normalized form ['…'] for the rest.
func member(k string) string {
	if isIdent(k) {
		return "." + k
	}
	r := strings.NewReplacer(`\`, `\\`, `'`, `\'`)
	return "['" + r.Replace(k) + "']"
}

func isIdent(k string) bool {
	if k == "" {
		return false
	}
	for i, c := range k {
		letter := c == '_' || c == '$' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
		if !letter && (i == 0 || c < '0' || c > '9') {
			return false
		}
	}
	return true
}

// scalar writes a leaf as JSON text. Every type canon's parsers return is
// handled, including a deferred refused number, so Compare never fails.
func scalar(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case string:
		var sb strings.Builder
		enc := json.NewEncoder(&sb)
		enc.SetEscapeHTML(false)
		enc.Encode(x)
		return strings.TrimSuffix(sb.String(), "\n")
	case canon.RefusedNumber:
		return x.Literal
	case *canon.RefusedNumber:
		return x.Literal
	case bool, int, int64, float64, json.Number:
		return fmt.Sprint(x)
	}
	return fmt.Sprintf("%T", v)
}

// key writes v as one deterministic string (members sorted by name), for
// telling equal trees apart from different ones.
func key(sb *strings.Builder, v any, depth int) {
	if depth > maxDepth {
		sb.WriteString("…")
		return
	}
	switch x := v.(type) {
	case map[string]any:
		ks := make([]string, 0, len(x))
		for k := range x {
			ks = append(ks, k)
		}
		sort.Strings(ks)
		sb.WriteByte('{')
		for _, k := range ks {
			sb.WriteString(scalar(k))
			sb.WriteByte(':')
			key(sb, x[k], depth+1)
			sb.WriteByte(',')
		}
		sb.WriteByte('}')
	case []any:
		sb.WriteByte('[')
		for _, c := range x {
			key(sb, c, depth+1)
			sb.WriteByte(',')
		}
		sb.WriteByte(']')
	default:
		sb.WriteString(scalar(x))
	}
}

func keyOf(vs ...any) string {
	var sb strings.Builder
	for _, v := range vs {
		key(&sb, v, 0)
		sb.WriteByte(';')
	}
	return sb.String()
}
