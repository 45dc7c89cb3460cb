package log

import (
	"errors"
	"fmt"

	"golang.org/x/mod/sumdb/tlog"
)

// A stored tile value is the C2SP tile (W level-0 hashes) followed by every
// complete interior node inside it: floor(W/2) hashes one level up, then
// floor(W/4), … floor(W/128). Proofs then read nodes instead of rehashing up
// to 255 of them per tile; the C2SP tile is the value's prefix.

// tileValueLen[w] is the stored length of a tile of width w.
var tileValueLen = func() (t [tileWidth + 1]int) {
	for w := 1; w <= tileWidth; w++ {
		for k := 0; k < tileHeight; k++ {
			t[w] += (w >> k) * hashSize
		}
	}
	return t
}()

// encodeTile returns the stored value for level-0 tile hashes.
func encodeTile(hashes []byte) []byte {
	w := len(hashes) / hashSize
	out := make([]byte, 0, tileValueLen[w])
	out = append(out, hashes...)
	prev := hashes
	for k := 1; k < tileHeight && len(prev) >= 2*hashSize; k++ {
		start := len(out)
		for i := 0; i+2*hashSize <= len(prev); i += 2 * hashSize {
			h := tlog.NodeHash(tlog.Hash(prev[i:i+hashSize]), tlog.Hash(prev[i+hashSize:i+2*hashSize]))
			out = append(out, h[:]...)
		}
		prev = out[start:]
	}
	return out
}

// tileValueWidth returns the width of a stored tile value from its length.
func tileValueWidth(v []byte) (int, error) {
	lo, hi := 1, tileWidth
	for lo <= hi {
		mid := (lo + hi) / 2
		switch n := tileValueLen[mid]; {
		case n == len(v):
			return mid, nil
		case n < len(v):
			lo = mid + 1
		default:
			hi = mid - 1
		}
	}
	return 0, fmt.Errorf("%d bytes is no tile length", len(v))
}

// decodeTile returns a stored value's level-0 hashes after checking that
// its interior nodes are the ones those hashes give.
func decodeTile(v []byte) ([]byte, error) {
	w, err := tileValueWidth(v)
	if err != nil {
		return nil, err
	}
	hashes := v[:w*hashSize]
	if string(encodeTile(hashes)) != string(v) {
		return nil, errors.New("interior nodes do not match the tile's hashes")
	}
	return hashes, nil
}

// tileNode returns node j at height k (0..7) inside a stored tile value.
func tileNode(v []byte, k int, j int64) (tlog.Hash, error) {
	w, err := tileValueWidth(v)
	if err != nil {
		return tlog.Hash{}, err
	}
	if j >= int64(w>>k) {
		return tlog.Hash{}, fmt.Errorf("node %d at height %d beyond a tile of width %d", j, k, w)
	}
	off := 0
	for m := 0; m < k; m++ {
		off += w >> m
	}
	off = (off + int(j)) * hashSize
	return tlog.Hash(v[off : off+hashSize]), nil
}

// fullTileRoot is the root of a checked full tile value, from its two
// stored nodes at height 7.
func fullTileRoot(v []byte) tlog.Hash {
	l, _ := tileNode(v, tileHeight-1, 0)
	r, _ := tileNode(v, tileHeight-1, 1)
	return tlog.NodeHash(l, r)
}
