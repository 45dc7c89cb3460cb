package log

import (
	"fmt"
	"io"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/histor-observer/histor/log/format"
)

const (
	tileHeight = 8               // C2SP tlog-tiles
	tileWidth  = 1 << tileHeight // hashes in a full tile
	hashSize   = 32
	fullTile   = tileWidth * hashSize
)

// emptyRoot is the RFC 9162 root of the empty tree.
var emptyRoot = format.EmptyRoot()

// subtreeHash is the Merkle root of 2^k concatenated hashes.
func subtreeHash(data []byte) [32]byte {
	if len(data) == hashSize {
		return [32]byte(data)
	}
	half := len(data) / 2
	return tlog.NodeHash(subtreeHash(data[:half]), subtreeHash(data[half:]))
}

// tileState is the right edge of the tree: for each tile level, the hashes
// of the level's last, not yet full tile. It is all the sequencer needs to
// extend the tree and compute its root.
type tileState struct {
	size  uint64
	edges [][]byte // edges[L]: (size >> 8L) % 256 hashes
}

func (t *tileState) clone() *tileState {
	c := &tileState{size: t.size, edges: make([][]byte, len(t.edges))}
	for i, e := range t.edges {
		c.edges[i] = append(make([]byte, 0, fullTile), e...)
	}
	return c
}

// tileWrite is one tile value to store: level, index, hashes.
type tileWrite func(level int, n uint64, data []byte)

// appendLeaves adds leaf hashes and reports every tile that changed (full
// tiles once, then the partial edges) to put.
func (t *tileState) appendLeaves(hashes [][32]byte, put tileWrite) {
	dirty := map[int]bool{}
	for _, h := range hashes {
		t.add(0, t.size, h, put, dirty)
		t.size++
	}
	for level := range dirty {
		if e := t.edges[level]; len(e) > 0 {
			put(level, t.edgeIndex(level), e)
		}
	}
}

// add appends a hash at tile level, count being how many hashes of the level
// precede it; a tile that fills is written and its root carried up a level.
func (t *tileState) add(level int, count uint64, h [32]byte, put tileWrite, dirty map[int]bool) {
	for len(t.edges) <= level {
		t.edges = append(t.edges, make([]byte, 0, fullTile))
	}
	t.edges[level] = append(t.edges[level], h[:]...)
	dirty[level] = true
	if len(t.edges[level]) < fullTile {
		return
	}
	full := t.edges[level]
	put(level, count/tileWidth, full)
	t.edges[level] = make([]byte, 0, fullTile)
	t.add(level+1, count/tileWidth, subtreeHash(full), put, dirty)
}

// edgeIndex is the index of level's partial tile at the current size.
func (t *tileState) edgeIndex(level int) uint64 {
	return (t.size >> (tileHeight * uint(level))) / tileWidth
}

// root is the RFC 9162 root: the complete subtrees of the size's binary
// decomposition, found in the edge tiles, folded right to left.
func (t *tileState) root() [32]byte {
	var subs [][32]byte
	for level := len(t.edges) - 1; level >= 0; level-- {
		data := t.edges[level]
		w := len(data) / hashSize
		off := 0
		for k := tileHeight - 1; k >= 0; k-- {
			if w&(1<<k) != 0 {
				subs = append(subs, subtreeHash(data[off*hashSize:(off+1<<k)*hashSize]))
				off += 1 << k
			}
		}
	}
	if len(subs) == 0 {
		return emptyRoot
	}
	h := subs[len(subs)-1]
	for i := len(subs) - 2; i >= 0; i-- {
		h = tlog.NodeHash(subs[i], h)
	}
	return h
}

// edgeWidths lists, for a tree size, each level's partial tile index and
// width (width 0 levels omitted).
func edgeWidths(size uint64) (levels []int, index []uint64, width []int) {
	for level := 0; size>>(tileHeight*uint(level)) > 0; level++ {
		n := size >> (tileHeight * uint(level))
		if w := int(n % tileWidth); w > 0 {
			levels = append(levels, level)
			index = append(index, n/tileWidth)
			width = append(width, w)
		}
	}
	return
}

// tileGetter reads a stored tile value (any width); the value is valid
// until the closer is closed.
type tileGetter func(level int, n uint64) ([]byte, io.Closer, error)

// hashReader serves tlog stored-hash indexes from stored tile values,
// reading each tile at most once per call and hashing nothing.
type hashReader struct {
	get tileGetter
}

func (r hashReader) ReadHashes(indexes []int64) ([]tlog.Hash, error) {
	type key struct {
		level int
		n     uint64
	}
	cache := map[key][]byte{}
	var closers []io.Closer
	defer func() {
		for _, c := range closers {
			c.Close()
		}
	}()
	out := make([]tlog.Hash, len(indexes))
	for i, idx := range indexes {
		level, n := tlog.SplitStoredHashIndex(idx)
		k := level % tileHeight // height inside the tile
		tk := key{level / tileHeight, uint64(n) >> (tileHeight - k)}
		data, ok := cache[tk]
		if !ok {
			var c io.Closer
			var err error
			if data, c, err = r.get(tk.level, tk.n); err != nil {
				return nil, fmt.Errorf("reading tile %d/%d: %w", tk.level, tk.n, err)
			}
			closers = append(closers, c)
			cache[tk] = data
		}
		h, err := tileNode(data, k, n-int64(tk.n<<(tileHeight-k)))
		if err != nil {
			return nil, corrupt(fmt.Sprintf("tile %d/%d", tk.level, tk.n), err)
		}
		out[i] = h
	}
	return out, nil
}
