package audit

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"filippo.io/torchwood"
	"github.com/transparency-dev/merkle/proof"
	"github.com/transparency-dev/merkle/rfc6962"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/histor-observer/histor/log/keys"
)

// tiles reads the whole tree through the C2SP endpoints under /log/ and checks it with code
// of its own and golang.org/x/mod's tlog, not with the log's: the checkpoint is signed by the
// did:key's key under the log's origin, it is the same tree as the verified STH, the entry
// bundles rebuild the checkpoint's root, and every hash tile is what those entries give.
func (a *auditor) tiles(ctx context.Context, iss *issuerDoc, sth *head) (*TilesReport, error) {
	cp, err := a.checkpoint(ctx, iss)
	if err != nil {
		return nil, err
	}
	if err := a.sameTree(ctx, cp, sth); err != nil {
		return nil, err
	}
	n := uint64(cp.N)
	if n > a.maxLeaves {
		return nil, incomplete("reading the tiles", fmt.Errorf("the checkpoint's size %d is over the bound of %d leaves", n, a.maxLeaves))
	}
	w := newTreeWalk(a)
	bundles, err := a.readEntries(ctx, n, w)
	if err != nil {
		return nil, err
	}
	if err := w.checkRoot(n, cp.Hash); err != nil {
		return nil, err
	}
	if err := w.finish(ctx, n); err != nil {
		return nil, err
	}
	return &TilesReport{CheckpointSize: n, Entries: n, HashTiles: w.compared, EntryBundles: bundles}, nil
}

// checkpoint fetches /log/checkpoint and opens it with the note key derived from the did:key.
// The issuer's advertised vkey must be that same key: one Ed25519 key signs both head formats.
func (a *auditor) checkpoint(ctx context.Context, iss *issuerDoc) (torchwood.Checkpoint, error) {
	var cp torchwood.Checkpoint
	if iss.Origin == "" {
		return cp, incomplete("reading /api/v1/issuer", fmt.Errorf("the log names no checkpoint origin"))
	}
	vkey, err := keys.NoteVerifierKey(iss.Origin, iss.pub)
	if err != nil {
		return cp, incomplete("deriving the note key", fmt.Errorf("origin %q: %w", iss.Origin, err))
	}
	if iss.LogVkey != vkey {
		return cp, misbehaved("tiles", "the log's note key %q is not the key of %s (%q)", iss.LogVkey, iss.DID, vkey)
	}
	verifier, err := note.NewVerifier(vkey)
	if err != nil {
		return cp, incomplete("deriving the note key", err)
	}
	body, err := a.get(ctx, "/log/checkpoint", nil, maxCheckpointBytes)
	if err != nil {
		return cp, err
	}
	n, err := note.Open(body, note.VerifierList(verifier))
	if err != nil {
		return cp, misbehaved("tiles", "the checkpoint does not verify against %s: %v", vkey, err)
	}
	if cp, err = torchwood.ParseCheckpoint(n.Text); err != nil {
		return cp, misbehaved("tiles", "the signed checkpoint is malformed: %v", err)
	}
	if cp.Origin != iss.Origin || cp.Extension != "" {
		return cp, misbehaved("tiles", "the checkpoint has origin %q and extension %q, want origin %q and none",
			cp.Origin, cp.Extension, iss.Origin)
	}
	return cp, nil
}

// sameTree checks that the checkpoint and the STH are heads of one tree: equal at one size, or
// joined by a valid consistency proof when the log moved between the two requests.
func (a *auditor) sameTree(ctx context.Context, cp torchwood.Checkpoint, sth *head) error {
	size := uint64(cp.N)
	if size == sth.Size {
		if cp.Hash != sth.Root {
			return misbehaved("tiles", "the checkpoint and the STH disagree at size %d: root %s vs %s",
				size, hex.EncodeToString(cp.Hash[:]), sth.rootHex())
		}
		return nil
	}
	small, large := size, sth.Size
	smallRoot, largeRoot := cp.Hash[:], sth.Root[:]
	if small > large {
		small, large, smallRoot, largeRoot = large, small, largeRoot, smallRoot
	}
	if small == 0 {
		empty := sha256.Sum256(nil)
		if !bytes.Equal(smallRoot, empty[:]) {
			return misbehaved("tiles", "a head of size 0 has a non-empty root")
		}
		return nil
	}
	hashes, err := a.consistencyProof(ctx, small, large)
	if err != nil {
		return err
	}
	if err := proof.VerifyConsistency(rfc6962.DefaultHasher, small, large, hashes, smallRoot, largeRoot); err != nil {
		return misbehaved("tiles", "the checkpoint (size %d) and the STH (size %d) are not one tree: %v", size, sth.Size, err)
	}
	return nil
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
		entries, err := splitBundle(body, int(width))
		if err != nil {
			return 0, misbehaved("tiles", "entry bundle %s: %v", path, err)
		}
		for _, e := range entries {
			if err := w.add(ctx, rfc6962.DefaultHasher.HashLeaf(e)); err != nil {
				return 0, err
			}
		}
		bundles++
	}
	return bundles, nil
}

// splitBundle cuts a C2SP entry bundle into exactly want entries, with nothing left over.
func splitBundle(body []byte, want int) ([][]byte, error) {
	entries := make([][]byte, 0, want)
	for len(body) > 0 {
		if len(entries) == want {
			return nil, fmt.Errorf("%d bytes left after the %d entries wanted", len(body), want)
		}
		e, rest, err := torchwood.ReadTileEntry(body)
		if err != nil {
			return nil, fmt.Errorf("entry %d: %w", len(entries), err)
		}
		entries = append(entries, e)
		body = rest
	}
	if len(entries) != want {
		return nil, fmt.Errorf("holds %d entries, want %d", len(entries), want)
	}
	return entries, nil
}
