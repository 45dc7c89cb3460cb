package mirror

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"filippo.io/torchwood"
	"github.com/cockroachdb/pebble"
	"golang.org/x/mod/sumdb/tlog"
)

const (
	tileHeight = torchwood.TileHeight
	tileWidth  = torchwood.TileWidth
	// maxCachedTiles bounds the hash tiles one Sync keeps from its source (8 KiB each).
	maxCachedTiles = 1024
)

// sourceTiles is a tlog.TileReader over a Source for one Sync: tlog.TileHashReader checks
// every tile it reads against the tree's root, so a source's forged hash tile is an error,
// never a hash. Tiles read are kept for the rest of the Sync.
type sourceTiles struct {
	ctx context.Context
	src Source

	mu    sync.Mutex
	cache map[tlog.Tile][]byte
}

func newSourceTiles(ctx context.Context, src Source) *sourceTiles {
	return &sourceTiles{ctx: ctx, src: src, cache: map[tlog.Tile][]byte{}}
}

func (t *sourceTiles) Height() int { return tileHeight }

func (t *sourceTiles) ReadTiles(tiles []tlog.Tile) ([][]byte, error) {
	out := make([][]byte, len(tiles))
	for i, tile := range tiles {
		t.mu.Lock()
		data, ok := t.cache[tile]
		t.mu.Unlock()
		if ok {
			out[i] = data
			continue
		}
		want := tile.W * tlog.HashSize
		data, err := t.src.Get(t.ctx, torchwood.TilePath(tile), want)
		if err != nil {
			return nil, fmt.Errorf("hash tile %s: %w", torchwood.TilePath(tile), err)
		}
		if len(data) != want {
			return nil, fmt.Errorf("hash tile %s: %w: %d bytes, want %d", torchwood.TilePath(tile), ErrTruncated, len(data), want)
		}
		out[i] = data
	}
	return out, nil
}

// SaveTiles keeps the tiles tlog verified.
func (t *sourceTiles) SaveTiles(tiles []tlog.Tile, data [][]byte) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for i, tile := range tiles {
		if len(t.cache) >= maxCachedTiles {
			return
		}
		t.cache[tile] = data[i]
	}
}

// tileFailure tells a source's misbehaviour from its absence in an error of tlog's hash
// reading: tlog reports a tile that does not hash to the tree as "downloaded inconsistent
// tile".
func tileFailure(err error) error {
	switch {
	case errors.Is(err, ErrTruncated), errors.Is(err, ErrOversized):
		return err
	case err != nil && strings.Contains(err.Error(), "inconsistent"):
		return fmt.Errorf("%w: %v", ErrMismatch, err)
	}
	return err
}

// localHashes reads the stored hashes the mirror holds of one observer, with the ones a
// batch being written adds on top.
type localHashes struct {
	db      pebble.Reader
	did     string
	overlay map[int64]tlog.Hash
}

func (h *localHashes) ReadHashes(indexes []int64) ([]tlog.Hash, error) {
	out := make([]tlog.Hash, len(indexes))
	for i, idx := range indexes {
		if v, ok := h.overlay[idx]; ok {
			out[i] = v
			continue
		}
		v, closer, err := h.db.Get(hashKey(h.did, idx))
		if err != nil {
			return nil, fmt.Errorf("reading stored hash %d of %s: %w", idx, h.did, err)
		}
		copy(out[i][:], v)
		closer.Close()
	}
	return out, nil
}

// subtreeHash is the RFC 9162 root of a full run of leaf hashes (a power of two).
func subtreeHash(leaves []tlog.Hash) tlog.Hash {
	level := append([]tlog.Hash(nil), leaves...)
	for len(level) > 1 {
		for i := 0; i < len(level)/2; i++ {
			level[i] = tlog.NodeHash(level[2*i], level[2*i+1])
		}
		level = level[:len(level)/2]
	}
	return level[0]
}
