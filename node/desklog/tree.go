// Package desklog holds the Log page's picture of the log: the right edge of
// an RFC 9162 tree (the perfect subtrees its root is built from, with their
// real hashes) and the newest leaves one by one, laid out for SVG. It never
// draws more than a few dozen shapes, whatever the size of the log, and it
// refuses to draw a tree whose hashes do not climb to the signed root.
package desklog

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"math/bits"
)

// RecentMax bounds the newest leaves drawn one by one: the walk down the
// right edge stops at the first subtree of at most this many leaves.
const RecentMax = 16

// Subtree is a perfect subtree on the tree's right edge: leaves
// [Start, Start+Size), Size a power of two.
type Subtree struct {
	Start, Size uint64
	Hash        [32]byte
}

// Tree is the drawn part of a log of Size leaves: Edge, top-down, are the
// left children along the right edge down to the newest RecentMax leaves
// or fewer, whose leaf hashes Recent holds from RecentStart on. Its hashes
// were checked against Root.
type Tree struct {
	Size        uint64
	Root        [32]byte
	Edge        []Subtree
	RecentStart uint64
	Recent      [][32]byte
}

// ErrRoot reports hashes that do not climb to the signed root: the store
// or the caller is wrong, and the picture would lie.
var ErrRoot = errors.New("the drawn hashes do not climb to the signed root")

// Plan is the split of a tree of size leaves: the edge subtrees (hashes
// unset) and where the newest leaves begin.
func Plan(size uint64) (edge []Subtree, recentStart uint64) {
	start, n := uint64(0), size
	for n > RecentMax {
		k := splitPoint(n)
		edge = append(edge, Subtree{Start: start, Size: k})
		start, n = start+k, n-k
	}
	return edge, start
}

// splitPoint is RFC 9162's k: the largest power of two below n (n ≥ 2).
func splitPoint(n uint64) uint64 { return 1 << (bits.Len64(n-1) - 1) }

// New builds the tree of a head of size leaves and root root from the
// inclusion proof of its last leaf (leaf size-1 in size, bottom-up as the
// log serves it), whose top entries are exactly the edge subtrees' hashes,
// and the leaf hashes from Plan's recent start to size.
func New(size uint64, root [32]byte, lastLeafProof [][32]byte, recent [][32]byte) (*Tree, error) {
	if size == 0 {
		return nil, errors.New("drawing the log: no leaves")
	}
	edge, rs := Plan(size)
	if uint64(len(recent)) != size-rs {
		return nil, fmt.Errorf("drawing the log: %d newest leaf hashes, want %d", len(recent), size-rs)
	}
	if len(lastLeafProof) < len(edge) {
		return nil, fmt.Errorf("drawing the log: proof of %d hashes, want at least %d", len(lastLeafProof), len(edge))
	}
	for i := range edge {
		edge[i].Hash = lastLeafProof[len(lastLeafProof)-1-i]
	}
	t := &Tree{Size: size, Root: root, Edge: edge, RecentStart: rs, Recent: recent}
	if got := t.climb(); got != root {
		return nil, fmt.Errorf("drawing the log at size %d: %w", size, ErrRoot)
	}
	return t, nil
}

// climb hashes the newest leaves up, then the edge, right to left.
func (t *Tree) climb() [32]byte {
	h := mth(t.Recent)
	for i := len(t.Edge) - 1; i >= 0; i-- {
		h = nodeHash(t.Edge[i].Hash, h)
	}
	return h
}

// mth is RFC 9162's MTH over leaf hashes (at least one).
func mth(leaves [][32]byte) [32]byte {
	if len(leaves) == 1 {
		return leaves[0]
	}
	k := splitPoint(uint64(len(leaves)))
	return nodeHash(mth(leaves[:k]), mth(leaves[k:]))
}

// nodeHash is RFC 9162's interior node hash, SHA-256(0x01 ‖ l ‖ r).
func nodeHash(l, r [32]byte) [32]byte {
	var b [65]byte
	b[0] = 1
	copy(b[1:], l[:])
	copy(b[33:], r[:])
	return sha256.Sum256(b[:])
}

// LeafHash is RFC 9162's leaf hash of an entry, SHA-256(0x00 ‖ entry).
func LeafHash(entry []byte) [32]byte {
	h := sha256.New()
	h.Write([]byte{0})
	h.Write(entry)
	return [32]byte(h.Sum(nil))
}
