package diff

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/histor-observer/histor/log/canon"
	"github.com/histor-observer/histor/log/clip"
)

// Bounds on a path diff.
const (
	// MaxPaths is the most path changes reported per field; the rest are
	// dropped and the field is marked Truncated.
	MaxPaths = 200
	// MaxValueBytes is the most bytes of a value quoted in a path change.
	MaxValueBytes = 1000
	// MaxKeyBytes is the longest member name written whole in a path; a
	// longer one is written as its first keyPrefixBytes bytes and a hash of
	// all of it, so distinct names stay distinct.
	MaxKeyBytes = 64
	// MaxFieldBytes bounds the bytes of paths and quoted values reported per
	// field; the changes past it are dropped and the field is marked
	// Truncated.
	MaxFieldBytes = 64 << 10
	// MaxChangeBytes bounds the same bytes over all the fields of one
	// Compare, so many small hostile tools cannot add up to a huge record.
	MaxChangeBytes = 1 << 20
	// keyPrefixBytes is how much of a member name over MaxKeyBytes a path
	// shows.
	keyPrefixBytes = 32
	// keyHashBytes is how much of a long member name's SHA-256 a path shows.
	keyHashBytes = 12
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
	// Path is e.g. $.properties.city.description; odd keys are written as
	// $['x-y'], keys over MaxKeyBytes as $['prefix'…hash].
	Path   string
	Kind   PathKind
	Before string
	After  string
}

// Paths diffs two JSON trees (as canon parses them) leaf by leaf, in path
// order. A nil side has no paths. It reports at most MaxPaths changes and
// MaxFieldBytes of them, and whether any were left out.
func Paths(before, after any) ([]PathChange, bool) {
	out, _, trunc := paths(before, after, MaxFieldBytes)
	return out, trunc
}

// paths also reports whether every change lies under a serialization
// keyword. It reports at most room bytes of changes. Once the list is full
// it walks on only while every change seen is a serialization one, and
// builds no more paths.
func paths(before, after any, room int) (out []PathChange, serialOnly, truncated bool) {
	d := &differ{room: min(room, MaxFieldBytes), serial: true}
	d.merge(rootCursor(before), rootCursor(after))
	return d.out, d.found && d.serial, d.truncated
}

// size is what a change costs against the byte bounds.
func (pc *PathChange) size() int {
	return len(pc.Path) + len(pc.Before) + len(pc.After)
}

// differ walks two trees together in path order, holding the path to the
// current node as a stack of segments so that a path is built only for a
// change reported.
type differ struct {
	stack     []string
	out       []PathChange
	room      int  // bytes left for out
	found     bool // some leaf differs
	serial    bool // every differing leaf lies under a serialization keyword
	truncated bool
	stop      bool
}

// merge visits the groups of two cursors in key order, pairing equal keys.
func (d *differ) merge(ca, cb *cursor) {
	ga, okA := ca.next()
	gb, okB := cb.next()
	for (okA || okB) && !d.stop {
		switch c := compareKeys(ga, gb, okA, okB); {
		case c < 0:
			d.visit(&ga, nil)
			ga, okA = ca.next()
		case c > 0:
			d.visit(nil, &gb)
			gb, okB = cb.next()
		default:
			d.visit(&ga, &gb)
			ga, okA = ca.next()
			gb, okB = cb.next()
		}
	}
}

func compareKeys(a, b group, okA, okB bool) int {
	switch {
	case !okB:
		return -1
	case !okA:
		return 1
	}
	return strings.Compare(a.key, b.key)
}

// visit compares a leaf or descends into a group; a nil side lacks it.
func (d *differ) visit(a, b *group) {
	g := a
	if g == nil {
		g = b
	}
	if g.leaf {
		if a == nil || b == nil || !sameLeaf(a, b) {
			d.change(g.seg, a, b)
		}
		return
	}
	d.stack = append(d.stack, g.seg)
	d.merge(a.members(), b.members())
	d.stack = d.stack[:len(d.stack)-1]
}

// change records one differing leaf, within the bounds.
func (d *differ) change(seg string, a, b *group) {
	d.found = true
	d.serial = d.serial && (a == nil || a.serial) && (b == nil || b.serial)
	if d.truncated {
		d.stop = !d.serial
		return
	}
	pc := pathChange(strings.Join(d.stack, "")+seg, a, b)
	if len(d.out) == MaxPaths || pc.size() > d.room {
		d.truncated = true
		d.stop = !d.serial
		return
	}
	d.room -= pc.size()
	d.out = append(d.out, pc)
}

func pathChange(path string, a, b *group) PathChange {
	pc := PathChange{Path: path, Kind: Changed}
	switch {
	case a == nil:
		pc.Kind = Added
	case b == nil:
		pc.Kind = Removed
	}
	if a != nil {
		pc.Before = clipValue(a.text())
	}
	if b != nil {
		pc.After = clipValue(b.text())
	}
	return pc
}

// mapKeywords hold maps from names to schemas: a key directly under one of
// them is a property name, not a keyword, so a property called
// "additionalProperties" is not mistaken for the keyword.
var mapKeywords = map[string]bool{
	"properties": true, "patternProperties": true, "$defs": true,
	"definitions": true, "dependentSchemas": true,
}

// clipValue cuts a quoted value to MaxValueBytes and the mark.
func clipValue(s string) string { return clip.String(s, MaxValueBytes+len(clip.Mark)) }

// segment writes the path step for member k, clipping a long name, and
// reports whether it is the .name form.
func segment(k string) (string, bool) {
	if len(k) <= MaxKeyBytes {
		return member(k), isIdent(k)
	}
	prefix := strings.TrimSuffix(clip.String(k, keyPrefixBytes+len(clip.Mark)), clip.Mark)
	sum := sha256.Sum256([]byte(k))
	return "['" + escapeKey(prefix) + "'…" + hex.EncodeToString(sum[:keyHashBytes]) + "]", false
}

// member writes one path step: .name for identifier-like keys, and the
// RFC 9535 normalized form ['…'] for the rest.
func member(k string) string {
	if isIdent(k) {
		return "." + k
	}
	return "['" + escapeKey(k) + "']"
}

// keyEscaper escapes a member name inside ['…'].
var keyEscaper = strings.NewReplacer(`\`, `\\`, `'`, `\'`)

func escapeKey(k string) string {
	return keyEscaper.Replace(k)
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
		b, _ := canon.MarshalPlain(x) // a string always encodes
		return string(b)
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
