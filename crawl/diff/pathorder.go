package diff

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
)

// A path diff lists leaves in the byte order of their full paths without
// building a path per leaf. Under one parent the leaves of a member fall in
// at most two contiguous runs against its siblings' leaves: those whose next
// step is .name and those whose next step is [...] (".item[0]" sorts after
// ".itemId" but ".item.x" before it). A group is one such run, keyed by the
// text all its paths share after the parent's path, so sorting groups by key
// sorts their leaves.

// group is a leaf (a scalar, an empty object or array, or a node past
// maxDepth) or one run of a node's members.
type group struct {
	key    string // seg for a leaf; seg and the byte the run's steps start with otherwise
	seg    string // the node's own path step
	name   string // the node's member name, telling clipped names apart
	v      any
	only   byte // of an object's members, the run's: '.' or '['
	leaf   bool
	deep   bool // past maxDepth: written as "…"
	serial bool // under a serialization keyword
	parent string
	depth  int
}

// groupsOf appends the groups of node v, in key order. parent is the key its
// members see as their parent's (see mapKeywords).
func groupsOf(list []group, seg, name string, v any, serial bool, parent string, depth int) []group {
	g := group{seg: seg, name: name, v: v, serial: serial, parent: parent, depth: depth}
	if depth > maxDepth {
		g.key, g.leaf, g.deep = seg, true, true
		return append(list, g)
	}
	switch x := v.(type) {
	case map[string]any:
		dot, bracket := memberSteps(x)
		if dot {
			g.key, g.only = seg+".", '.'
			list = append(list, g)
		}
		if bracket {
			g.key, g.only = seg+"[", '['
			list = append(list, g)
		}
		if dot || bracket {
			return list
		}
	case []any:
		if len(x) > 0 {
			g.key = seg + "["
			return append(list, g)
		}
	}
	g.key, g.leaf = seg, true
	return append(list, g)
}

// plainKey reports whether member k is written as .name.
func plainKey(k string) bool {
	return len(k) <= MaxKeyBytes && isIdent(k)
}

// memberSteps reports whether an object has members written as .name and
// as [...].
func memberSteps(m map[string]any) (dot, bracket bool) {
	for k := range m {
		if plainKey(k) {
			dot = true
		} else {
			bracket = true
		}
		if dot && bracket {
			break
		}
	}
	return dot, bracket
}

// text is a leaf's JSON text.
func (g *group) text() string {
	if g.deep {
		return "…"
	}
	switch g.v.(type) {
	case map[string]any:
		return "{}"
	case []any:
		return "[]"
	}
	return scalar(g.v)
}

// sameLeaf reports whether two leaves have the same text, comparing strings
// and integers directly so that equal leaves are not written out.
func sameLeaf(a, b *group) bool {
	if !a.deep && !b.deep {
		switch x := a.v.(type) {
		case string:
			if y, ok := b.v.(string); ok && x == y {
				return true
			}
		case int64:
			if y, ok := b.v.(int64); ok && x == y {
				return true
			}
		}
	}
	return a.text() == b.text()
}

// cursor yields groups in key order: an object's, sorted up front, or an
// array's, made one element at a time.
type cursor struct {
	list  []group
	arr   []any
	owner *group // the array's group
	i     int    // the element last made, -1 before the first
	buf   [2]group
}

// rootCursor yields the groups of a whole tree; a nil tree has none.
func rootCursor(v any) *cursor {
	if v == nil {
		return &cursor{}
	}
	return &cursor{list: groupsOf(nil, "$", "", v, false, "", 0)}
}

// members is a cursor over the members of a non-leaf group; a nil group has
// none.
func (g *group) members() *cursor {
	if g == nil {
		return &cursor{}
	}
	switch x := g.v.(type) {
	case map[string]any:
		return &cursor{list: g.objectMembers(x)}
	case []any:
		return &cursor{arr: x, owner: g, i: -1}
	}
	return &cursor{}
}

// objectMembers is the groups of the members in g's run, sorted by key and
// then by member name, so colliding clipped names keep a fixed order.
func (g *group) objectMembers(m map[string]any) []group {
	keyword := !mapKeywords[g.parent]
	var list []group
	for k, c := range m {
		if plainKey(k) != (g.only == '.') {
			continue
		}
		serial := g.serial || keyword && (k == "$schema" || k == "additionalProperties")
		parent := k
		if !keyword {
			parent = "" // a property name never makes its children map members
		}
		seg, _ := segment(k)
		list = groupsOf(list, seg, k, c, serial, parent, g.depth+1)
	}
	slices.SortFunc(list, func(a, b group) int {
		return cmp.Or(strings.Compare(a.key, b.key), strings.Compare(a.name, b.name))
	})
	return list
}

func (c *cursor) next() (group, bool) {
	for len(c.list) == 0 {
		if !c.more() {
			return group{}, false
		}
	}
	g := c.list[0]
	c.list = c.list[1:]
	return g, true
}

// more makes the groups of an array's next element.
func (c *cursor) more() bool {
	if c.owner == nil {
		return false
	}
	i, ok := nextIndex(c.i, len(c.arr))
	if !ok {
		return false
	}
	c.i = i
	o := c.owner
	c.list = groupsOf(c.buf[:0], "["+strconv.Itoa(i)+"]", "", c.arr[i], o.serial, "", o.depth+1)
	return true
}

// nextIndex is the index after p (-1 to start) among n, in the byte order
// of their "[i]" steps: "[10]" sorts before "[1]", so an index comes after
// the indices it prefixes. It reports false past the last.
func nextIndex(p, n int) (int, bool) {
	switch {
	case p < 0:
		return 0, n > 0
	case p == 0:
		return descend(1, n), n > 1
	case p%10 == 9 || p+1 >= n:
		if p < 10 {
			return 0, false
		}
		return p / 10, true
	}
	return descend(p+1, n), true
}

// descend is the first index in order among q and the indices it prefixes.
func descend(q, n int) int {
	for q*10 < n {
		q *= 10
	}
	return q
}
