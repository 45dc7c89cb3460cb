package audit

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"

	"filippo.io/torchwood"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/histor-observer/histor/log/format"
	"github.com/histor-observer/histor/log/keys"
)

// tiles reads the whole tree through the C2SP endpoints under /log/ and checks it with code
// of its own and golang.org/x/mod's tlog, not with the log's: the checkpoint is signed by the
// did:key's key under the log's origin, it is the same tree as the verified STH, the entry
// bundles rebuild the checkpoint's root, and every hash tile is what those entries give.
func (a *auditor) tiles(ctx context.Context, iss *issuerDoc, sth *head) (*TilesReport, error) {
	cp, raw, err := a.checkpoint(ctx, iss)
	if err != nil {
		return nil, err
	}
	if err := a.sameTree(ctx, cp, raw, sth); err != nil {
		return nil, err
	}
	n := cp.Size
	if n > a.maxLeaves {
		return nil, incomplete("reading the tiles", fmt.Errorf("the checkpoint's size %d is over the bound of %d leaves", n, a.maxLeaves))
	}
	w := newTreeWalk(a)
	bundles, err := a.readEntries(ctx, n, w)
	if err != nil {
		return nil, err
	}
	if err := w.checkRoot(n, cp.Root); err != nil {
		return nil, err
	}
	if err := w.finish(ctx, n); err != nil {
		return nil, err
	}
	return &TilesReport{CheckpointSize: n, Entries: n, HashTiles: w.compared, EntryBundles: bundles}, nil
}

// checkpoint fetches /log/checkpoint and opens it with the note key derived from the did:key.
// The issuer's advertised vkey must be that same key: one Ed25519 key signs both head formats.
// It returns the checkpoint with the note as served, the evidence if it forks from the STH.
func (a *auditor) checkpoint(ctx context.Context, iss *issuerDoc) (format.Checkpoint, []byte, error) {
	var cp format.Checkpoint
	if iss.Origin == "" {
		return cp, nil, incomplete("reading /api/v1/issuer", fmt.Errorf("the log names no checkpoint origin"))
	}
	vkey, err := keys.NoteVerifierKey(iss.Origin, iss.pub)
	if err != nil {
		return cp, nil, incomplete("deriving the note key", fmt.Errorf("origin %q: %w", iss.Origin, err))
	}
	if iss.LogVkey != vkey {
		return cp, nil, misbehaved("tiles", "the log's note key %q is not the key of %s (%q)", iss.LogVkey, iss.DID, vkey)
	}
	verifier, err := format.NewVerifier(iss.Origin, iss.pub)
	if err != nil {
		return cp, nil, incomplete("deriving the note key", err)
	}
	body, err := a.get(ctx, "/log/checkpoint", nil, maxCheckpointBytes)
	if err != nil {
		return cp, nil, err
	}
	// Strict: the log's signature, its origin, no extension lines, one spelling of each line.
	if cp, err = format.ParseCheckpoint(body, verifier); err != nil {
		return cp, nil, misbehaved("tiles", "the checkpoint is not a well-formed checkpoint signed by %s: %v", vkey, err)
	}
	return cp, body, nil
}

// sameTree checks that the checkpoint and the STH are heads of one tree: equal at one size, or
// joined by a valid consistency proof when the log moved between the two requests.
func (a *auditor) sameTree(ctx context.Context, cp format.Checkpoint, raw []byte, sth *head) error {
	signed := format.SignedHead{Raw: raw, Size: cp.Size, Root: cp.Root}
	var hashes [][32]byte
	if small, large := min(cp.Size, sth.Size), max(cp.Size, sth.Size); small > 0 && small < large {
		var err error
		if hashes, err = a.consistencyProof(ctx, small, large); err != nil {
			return err
		}
	}
	err := format.CheckConsistency(signed, sth.signed(), hashes)
	switch {
	case err == nil:
		return nil
	case cp.Size == sth.Size:
		return forked("tiles", err, "the checkpoint and the STH disagree at size %d: root %s vs %s",
			cp.Size, hex.EncodeToString(cp.Root[:]), sth.rootHex())
	default:
		return forked("tiles", err, "the checkpoint (size %d) and the STH (size %d) are not one tree: %v",
			cp.Size, sth.Size, errors.Unwrap(err))
	}
}

// readEntries fetches every entry bundle of a tree of size n, gives each entry to w, and says
// how many bundles were read.
func (a *auditor) readEntries(ctx context.Context, n uint64, w *treeWalk) (int, error) {
	bundles := 0
	for start := uint64(0); start < n; start += torchwood.TileWidth {
		width := min(n-start, torchwood.TileWidth)
		t := tlog.Tile{H: torchwood.TileHeight, L: -1, N: int64(start / torchwood.TileWidth), W: int(width)}
		path := "/log/" + torchwood.TilePath(t)
		body, err := a.get(ctx, path, nil, maxBundleBytes)
		if err != nil {
			return 0, err
		}
		entries, err := format.SplitBundle(body, int(width))
		if err != nil {
			return 0, misbehaved("tiles", "entry bundle %s: %v", path, err)
		}
		for _, e := range entries {
			leaf := format.LeafHash(e)
			if err := w.add(ctx, leaf[:]); err != nil {
				return 0, err
			}
		}
		bundles++
	}
	return bundles, nil
}
