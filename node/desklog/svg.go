package desklog

import (
	"encoding/hex"
	"fmt"
	"math/bits"
	"strconv"
)

// Geometry of the drawing, in SVG user units.
const (
	margin   = 16
	colWidth = 104 // one edge subtree
	leafStep = 36  // one newest leaf
	rowStep  = 46  // one level
	nodeR    = 9
	textRoom = 44 // below the leaves, for two lines of labels
)

// Drawing is a laid-out Tree, ready for an html/template to write as SVG;
// every string is plain text the template escapes.
type Drawing struct {
	Width, Height int
	Title, Desc   string
	Edges         []Line
	Triangles     []Triangle
	Nodes         []Node
	// Rows is the text alternative: one row per drawn subtree or leaf.
	Rows []Row
}

// Line joins a parent to a child.
type Line struct{ X1, Y1, X2, Y2 int }

// Triangle is an edge subtree: apex at the parent's child position, base on
// the leaves' row, with two lines of text under it.
type Triangle struct {
	Points       string
	TextX, TextY int
	Count, Range string
	Title        string
}

// Node is a circle: the root, an inner node or a leaf.
type Node struct {
	X, Y  int
	R     int
	Class string // "root", "inner", "leaf" or "leaf newest"
	Label string // under a leaf: its index; empty otherwise
	Title string
}

// Row is one line of the text alternative.
type Row struct {
	What, Leaves, Count, Hash string
}

// Draw lays t out.
func (t *Tree) Draw() *Drawing {
	d := &Drawing{}
	rh := height(uint64(len(t.Recent)))
	rows := len(t.Edge) + rh
	base := margin + rows*rowStep
	d.Width = 2*margin + len(t.Edge)*colWidth + len(t.Recent)*leafStep
	d.Height = base + nodeR + textRoom
	rx, ry := t.drawRecent(d, base)
	t.drawEdge(d, base, rx, ry)
	d.Title = fmt.Sprintf("The log's Merkle tree at %s labels", Comma(t.Size))
	d.Desc = t.describe()
	return d
}

// drawEdge draws the spine from the root down to the newest leaves' top
// node at (rx, ry), with each edge subtree to its left.
func (t *Tree) drawEdge(d *Drawing, base, rx, ry int) {
	px, py := -1, 0
	for i, s := range t.Edge {
		cx := margin + i*colWidth + colWidth/2
		x, y := cx+colWidth/2, margin+i*rowStep
		class, title := "inner", fmt.Sprintf("node over labels %s, hash %s", span(s.Start, t.Size), short(t.spineHash(i)))
		if i == 0 {
			class, title = "root", "the signed root "+hex.EncodeToString(t.Root[:])
		}
		if px >= 0 {
			d.Edges = append(d.Edges, Line{px, py, x, y})
		}
		ay := y + rowStep
		d.Edges = append(d.Edges, Line{x, y, cx, ay})
		d.Nodes = append(d.Nodes, Node{X: x, Y: y, R: nodeR, Class: class, Title: title})
		half := colWidth * 42 / 100
		d.Triangles = append(d.Triangles, Triangle{
			Points: fmt.Sprintf("%d,%d %d,%d %d,%d", cx, ay, cx-half, base, cx+half, base),
			TextX:  cx, TextY: base + nodeR + 14,
			Count: Comma(s.Size) + " labels", Range: span(s.Start, s.Start+s.Size),
			Title: fmt.Sprintf("perfect subtree of %s labels (%s), hash %s", Comma(s.Size), span(s.Start, s.Start+s.Size), short(s.Hash)),
		})
		d.Rows = append(d.Rows, Row{"perfect subtree", span(s.Start, s.Start+s.Size), Comma(s.Size), hex.EncodeToString(s.Hash[:])})
		px, py = x, y
	}
	if px >= 0 {
		d.Edges = append(d.Edges, Line{px, py, rx, ry})
	}
}

// drawRecent draws the newest leaves and the nodes above them, and
// returns where their top node is.
func (t *Tree) drawRecent(d *Drawing, base int) (int, int) {
	x0 := margin + len(t.Edge)*colWidth
	var walk func(lo, hi int) ([32]byte, int, int)
	walk = func(lo, hi int) ([32]byte, int, int) {
		if hi-lo == 1 {
			return t.drawLeaf(d, lo, x0+lo*leafStep+leafStep/2, base)
		}
		k := int(splitPoint(uint64(hi - lo)))
		lh, lx, ly := walk(lo, lo+k)
		rh, rx, ry := walk(lo+k, hi)
		h := nodeHash(lh, rh)
		x, y := (lx+rx)/2, base-height(uint64(hi-lo))*rowStep
		d.Edges = append(d.Edges, Line{x, y, lx, ly}, Line{x, y, rx, ry})
		first, end := t.RecentStart+uint64(lo), t.RecentStart+uint64(hi)
		d.Nodes = append(d.Nodes, Node{X: x, Y: y, R: nodeR, Class: "inner",
			Title: fmt.Sprintf("node over labels %s, hash %s", span(first, end), short(h))})
		return h, x, y
	}
	_, x, y := walk(0, len(t.Recent))
	if len(t.Edge) == 0 { // the newest leaves are the whole tree
		top := &d.Nodes[len(d.Nodes)-1]
		top.Class, top.Title = "root", "the signed root "+hex.EncodeToString(t.Root[:])
	}
	return x, y
}

func (t *Tree) drawLeaf(d *Drawing, i, x, y int) ([32]byte, int, int) {
	idx := t.RecentStart + uint64(i)
	h := t.Recent[i]
	n := Node{X: x, Y: y, R: nodeR - 2, Class: "leaf", Label: Comma(idx),
		Title: fmt.Sprintf("label %s, leaf hash %s", Comma(idx), short(h))}
	what := "label"
	if idx == t.Size-1 {
		n.Class, n.Title, what = "leaf newest", n.Title+" (the newest)", "newest label"
	}
	d.Nodes = append(d.Nodes, n)
	d.Rows = append(d.Rows, Row{what, Comma(idx), "1", hex.EncodeToString(h[:])})
	return h, x, y
}

// spineHash is the hash of the i-th node down the right edge.
func (t *Tree) spineHash(i int) [32]byte {
	h := mth(t.Recent)
	for j := len(t.Edge) - 1; j >= i; j-- {
		h = nodeHash(t.Edge[j].Hash, h)
	}
	return h
}

func (t *Tree) describe() string {
	if len(t.Edge) == 0 {
		return fmt.Sprintf("All %s labels drawn one by one, hashed pairwise up to the signed root.", Comma(t.Size))
	}
	return fmt.Sprintf("The signed root over %s labels is built from %d perfect subtree(s) along the right edge, drawn as triangles with their label counts, and the newest %d labels drawn one by one.",
		Comma(t.Size), len(t.Edge), len(t.Recent))
}

// height is the levels above the leaves of an RFC 9162 tree of n leaves.
func height(n uint64) int {
	if n <= 1 {
		return 0
	}
	return bits.Len64(n - 1)
}

// span names leaves [a, b) as people count them.
func span(a, b uint64) string {
	if b-a == 1 {
		return Comma(a)
	}
	return Comma(a) + "–" + Comma(b-1)
}

func short(h [32]byte) string { return hex.EncodeToString(h[:6]) + "…" }

// Comma writes n with thousands separators.
func Comma(n uint64) string {
	s := strconv.FormatUint(n, 10)
	out := make([]byte, 0, len(s)+len(s)/3)
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	return string(out)
}
