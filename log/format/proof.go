package format

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/transparency-dev/merkle/proof"
	"github.com/transparency-dev/merkle/rfc6962"
	"golang.org/x/mod/sumdb/tlog"
)

// HashSize is the size of every RFC 9162 hash (SHA-256).
const HashSize = 32

// MaxProofHashes bounds ParseHexHashes: an inclusion proof in a tree of at most 2^64 leaves
// has at most 64 hashes, a consistency proof at most twice that.
const MaxProofHashes = 128

// LeafHash is the RFC 9162 leaf hash of an entry: SHA-256(0x00 ‖ entry).
func LeafHash(entry []byte) [32]byte { return tlog.RecordHash(entry) }

// EmptyRoot is the RFC 9162 root of the empty tree, SHA-256 of nothing.
func EmptyRoot() [32]byte { return sha256.Sum256(nil) }

// VerifyInclusion checks an RFC 9162 inclusion proof: that leaf is entry index of the tree of
// the given size and root.
func VerifyInclusion(index, size uint64, leaf [32]byte, hashes [][32]byte, root [32]byte) error {
	if err := proof.VerifyInclusion(rfc6962.DefaultHasher, index, size, leaf[:], slices(hashes), root[:]); err != nil {
		return fmt.Errorf("verifying inclusion of leaf %d in the tree of size %d: %w", index, size, err)
	}
	return nil
}

// VerifyConsistency checks an RFC 9162 consistency proof: that the tree of size2 with root2
// extends the tree of size1 with root1. Equal sizes need equal roots and no proof; size 0
// needs the empty root and no proof.
func VerifyConsistency(size1, size2 uint64, hashes [][32]byte, root1, root2 [32]byte) error {
	err := proof.VerifyConsistency(rfc6962.DefaultHasher, size1, size2, slices(hashes), root1[:], root2[:])
	if err == nil && size1 == 0 && root1 != EmptyRoot() {
		// The library takes any root for size 0; the empty tree has exactly one.
		err = errors.New("a tree of size 0 with a root other than the empty root")
	}
	if err != nil {
		return fmt.Errorf("verifying consistency of sizes %d and %d: %w", size1, size2, err)
	}
	return nil
}

func slices(hashes [][32]byte) [][]byte {
	out := make([][]byte, len(hashes))
	for i := range hashes {
		out[i] = hashes[i][:]
	}
	return out
}

// ParseHexHashes decodes the proof hashes of HISTOR's JSON proof answers: at most
// MaxProofHashes, each 64 lowercase hex digits, as the log writes them.
func ParseHexHashes(hexes []string) ([][32]byte, error) {
	if len(hexes) > MaxProofHashes {
		return nil, fmt.Errorf("%d proof hashes, at most %d", len(hexes), MaxProofHashes)
	}
	out := make([][32]byte, len(hexes))
	for i, s := range hexes {
		h, err := lowerHex32(s)
		if err != nil {
			return nil, fmt.Errorf("hash %d (%q): %w", i, s, err)
		}
		out[i] = h
	}
	return out, nil
}

// SignedHead is one signed head of a log, in either of its forms, with what it commits to.
type SignedHead struct {
	// Raw is the head as served and verified: a histor.sth/v1 document or a checkpoint note.
	// It is the evidence; Size and Root are what it says.
	Raw  []byte
	Size uint64
	Root [32]byte
}

// InconsistencyError says that two heads signed by one log are not one tree: the same size
// with different roots, or a consistency proof between them that does not verify. It keeps
// both signed heads and the proof, so anyone holding the log's key can check the claim
// offline; with a failed proof, the claim stands as long as the log cannot give one that
// verifies.
type InconsistencyError struct {
	Smaller, Larger SignedHead // Smaller.Size <= Larger.Size; at equal sizes, in the order checked
	Proof           [][32]byte // the consistency proof that failed (none at equal sizes)
	Err             error      // why the check failed
}

func (e *InconsistencyError) Error() string {
	return fmt.Sprintf("heads of sizes %d (root %s) and %d (root %s) are not one tree: %v",
		e.Smaller.Size, hex.EncodeToString(e.Smaller.Root[:]), e.Larger.Size, hex.EncodeToString(e.Larger.Root[:]), e.Err)
}

func (e *InconsistencyError) Unwrap() error { return e.Err }

// CheckConsistency returns nil when a and b are heads of one tree, proven by hashes (the
// consistency proof from the smaller to the larger; none at equal sizes), and otherwise an
// *InconsistencyError holding both heads and the proof. It checks no signature: a and b are
// heads their caller has verified.
func CheckConsistency(a, b SignedHead, hashes [][32]byte) error {
	small, large := a, b
	if b.Size < a.Size {
		small, large = b, a
	}
	if err := VerifyConsistency(small.Size, large.Size, hashes, small.Root, large.Root); err != nil {
		return &InconsistencyError{Smaller: small, Larger: large, Proof: hashes, Err: err}
	}
	return nil
}
