package audit

import (
	"bytes"
	"context"
	"encoding/hex"
	"fmt"

	"filippo.io/torchwood"
	"github.com/transparency-dev/merkle/compact"
	"github.com/transparency-dev/merkle/rfc6962"
	"golang.org/x/mod/sumdb/tlog"
)

// tileBytes is the size of a full hash tile.
const tileBytes = torchwood.TileWidth * tlog.HashSize

// treeWalk rebuilds a tree from its leaf hashes in order, keeping only its right edge (a compact
// range) and, for each tile level, the hash tile being filled, so memory grows with the log's
// height, not its size. Each hash tile is compared with the served one as soon as it is full.
type treeWalk struct {
	a        *auditor
	edge     *compact.Range
	filling  [][]byte // filling[L]: the hashes of the level-L tile being filled
	compared int      // hash tiles compared so far
	err      error    // the first failure met while visiting the new nodes
}

func newTreeWalk(a *auditor) *treeWalk {
	f := &compact.RangeFactory{Hash: rfc6962.DefaultHasher.HashChildren}
	return &treeWalk{a: a, edge: f.NewEmptyRange(0)}
}

// add appends the next leaf hash; every node it completes at a tile level joins that level's tile.
func (w *treeWalk) add(ctx context.Context, leaf []byte) error {
	err := w.edge.Append(leaf, func(id compact.NodeID, hash []byte) {
		if w.err == nil && id.Level%torchwood.TileHeight == 0 {
			w.err = w.keep(ctx, id, hash)
		}
	})
	if err != nil {
		return incomplete("rebuilding the tree from the entries", err)
	}
	return w.err
}

// keep adds a node to its level's tile, and compares the tile once it is full.
func (w *treeWalk) keep(ctx context.Context, id compact.NodeID, hash []byte) error {
	level := int(id.Level / torchwood.TileHeight)
	for len(w.filling) <= level {
		w.filling = append(w.filling, make([]byte, 0, tileBytes))
	}
	w.filling[level] = append(w.filling[level], hash...)
	if len(w.filling[level]) < tileBytes {
		return nil
	}
	t := tlog.Tile{H: torchwood.TileHeight, L: level, N: int64(id.Index / torchwood.TileWidth), W: torchwood.TileWidth}
	err := w.compare(ctx, t, w.filling[level])
	w.filling[level] = w.filling[level][:0]
	return err
}

// checkRoot checks that the leaves added make a tree of size n with root want.
func (w *treeWalk) checkRoot(n uint64, want [32]byte) error {
	if w.edge.End() != n {
		return incomplete("rebuilding the tree from the entries", fmt.Errorf("%d leaves read, want %d", w.edge.End(), n))
	}
	root := rfc6962.DefaultHasher.EmptyRoot()
	if n > 0 {
		var err error
		if root, err = w.edge.GetRootHash(nil); err != nil {
			return incomplete("recomputing the root from the entries", err)
		}
	}
	if !bytes.Equal(root, want[:]) {
		return misbehaved("tiles", "the entries under /log/tile/entries give root %s, the checkpoint of size %d says %s",
			hex.EncodeToString(root), n, hex.EncodeToString(want[:]))
	}
	return nil
}

// finish compares the partial tile left at each level of a tree of size n.
func (w *treeWalk) finish(ctx context.Context, n uint64) error {
	for level, data := range w.filling {
		if len(data) == 0 {
			continue
		}
		index := n >> (torchwood.TileHeight * (level + 1))
		t := tlog.Tile{H: torchwood.TileHeight, L: level, N: int64(index), W: len(data) / tlog.HashSize}
		if err := w.compare(ctx, t, data); err != nil {
			return err
		}
	}
	return nil
}

// compare fetches hash tile t and checks it is byte for byte want, the tile the entries give.
func (w *treeWalk) compare(ctx context.Context, t tlog.Tile, want []byte) error {
	path := "/log/" + torchwood.TilePath(t)
	got, err := w.a.get(ctx, path, nil, maxHashTileBytes)
	if err != nil {
		return err
	}
	if !bytes.Equal(got, want) {
		return misbehaved("tiles", "hash tile %s disagrees with the entries", path)
	}
	w.compared++
	return nil
}
