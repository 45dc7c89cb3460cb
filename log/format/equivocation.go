package format

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"strconv"

	"golang.org/x/mod/sumdb/note"
)

// An equivocation bundle is the evidence that a log signed two checkpoints that cannot both be
// heads of one append-only tree. It holds both signed notes exactly as they were received and
// the consistency proof that was tried between them (none at equal sizes), so anyone with the
// log's verifier key can check it offline:
//
//	histor.equivocation/v1
//	<length of note A in bytes, canonical decimal>
//	<length of note B in bytes, canonical decimal>
//	<consistency proof hash, standard base64>   (zero or more lines)
//	<empty line>
//	<note A><note B>
//
// A is the smaller checkpoint; at equal sizes, the one whose root is smaller as bytes. So one
// pair of checkpoints and one proof have exactly one bundle encoding.
//
// Two kinds of bundle exist, and they do not weigh the same:
//
//   - EquivocationSameSize: two checkpoints of one size with different roots. The log signed
//     both, so the bundle alone shows that it forked.
//   - EquivocationFailedProof: checkpoints of different sizes and a consistency proof of the
//     right length between them that does not verify. Anyone can submit a bad proof, so this
//     bundle is a claim the log answers by serving a proof between the two sizes that does
//     verify; if it cannot, it forked. (A checkpoint of size 0 with a root other than the empty
//     tree's is inconsistent with every other and needs no proof.)

// EquivocationType is the first line of every equivocation bundle, and the domain string of
// its ID.
const EquivocationType = "histor.equivocation/v1"

// MaxEquivocationBytes bounds ParseEquivocation's input: two notes of at most
// MaxCheckpointBytes and a proof of at most MaxProofHashes lines.
const MaxEquivocationBytes = 2*MaxCheckpointBytes + MaxProofHashes*45 + 64

// ErrNoEquivocation marks two checkpoints (and a proof) that do not show a fork: different
// origins, a proof of the wrong length for the two sizes, or a pair that is consistent.
var ErrNoEquivocation = errors.New("not an equivocation")

// EquivocationKind says what an equivocation bundle shows; see EquivocationType.
type EquivocationKind int

const (
	// EquivocationSameSize is two checkpoints of one size with different roots.
	EquivocationSameSize EquivocationKind = iota + 1
	// EquivocationFailedProof is two checkpoints of different sizes and a consistency proof
	// between them that does not verify.
	EquivocationFailedProof
)

func (k EquivocationKind) String() string {
	switch k {
	case EquivocationSameSize:
		return "same-size"
	case EquivocationFailedProof:
		return "failed-proof"
	}
	return "EquivocationKind(" + strconv.Itoa(int(k)) + ")"
}

// Equivocation is a parsed equivocation bundle.
type Equivocation struct {
	Origin string
	// A and B are the two signed notes as received, with what each says; A.Size <= B.Size,
	// and at equal sizes A.Root sorts before B.Root.
	A, B SignedHead
	// Proof is the consistency proof from A.Size to B.Size that fails; empty at equal sizes.
	Proof [][32]byte
}

// Kind says which of the two kinds of bundle e is.
func (e *Equivocation) Kind() EquivocationKind {
	if e.A.Size == e.B.Size {
		return EquivocationSameSize
	}
	return EquivocationFailedProof
}

// ID names the pair of checkpoints: SHA-256 over the domain string, the origin and both sizes
// and roots. It leaves out the notes' other signature lines and the proof, so every bundle
// about the same two checkpoints has the same ID whoever assembled it, and a party who
// replays one pair with ever new bad proofs cannot make more than one bundle of it.
func (e *Equivocation) ID() [32]byte {
	h := sha256.New()
	h.Write([]byte(EquivocationType + " id\n" + e.Origin + "\n"))
	var b [2 * (8 + HashSize)]byte
	binary.BigEndian.PutUint64(b[0:], e.A.Size)
	copy(b[8:], e.A.Root[:])
	binary.BigEndian.PutUint64(b[40:], e.B.Size)
	copy(b[48:], e.B.Root[:])
	h.Write(b[:])
	return [32]byte(h.Sum(nil))
}

// Marshal returns the bundle's one encoding.
func (e *Equivocation) Marshal() []byte {
	b := []byte(EquivocationType + "\n")
	b = strconv.AppendInt(b, int64(len(e.A.Raw)), 10)
	b = append(b, '\n')
	b = strconv.AppendInt(b, int64(len(e.B.Raw)), 10)
	b = append(b, '\n')
	for _, h := range e.Proof {
		b = base64.StdEncoding.AppendEncode(b, h[:])
		b = append(b, '\n')
	}
	b = append(b, '\n')
	b = append(b, e.A.Raw...)
	return append(b, e.B.Raw...)
}

// NewEquivocation makes the bundle of two signed checkpoint notes, in either order, and the
// consistency proof tried between them (from the smaller to the larger; none at equal sizes).
// It opens both notes with v, so both must be validly signed by the log, and checks that they
// show a fork; otherwise the error wraps ErrNoEquivocation (or ErrSignature, or says what is
// malformed). The notes are kept byte for byte.
func NewEquivocation(a, b []byte, proof [][32]byte, v note.Verifier) (*Equivocation, error) {
	ca, err := ParseCheckpoint(a, v)
	if err != nil {
		return nil, fmt.Errorf("making equivocation: first checkpoint: %w", err)
	}
	cb, err := ParseCheckpoint(b, v)
	if err != nil {
		return nil, fmt.Errorf("making equivocation: second checkpoint: %w", err)
	}
	e := &Equivocation{
		Origin: ca.Origin,
		A:      SignedHead{Raw: bytes.Clone(a), Size: ca.Size, Root: ca.Root},
		B:      SignedHead{Raw: bytes.Clone(b), Size: cb.Size, Root: cb.Root},
		Proof:  append([][32]byte(nil), proof...),
	}
	if inOrder(e.B, e.A) {
		e.A, e.B = e.B, e.A
	}
	if err := e.check(cb.Origin); err != nil {
		return nil, fmt.Errorf("making equivocation: %w", err)
	}
	return e, nil
}

// inOrder reports whether x comes before y in a bundle.
func inOrder(x, y SignedHead) bool {
	if x.Size != y.Size {
		return x.Size < y.Size
	}
	return bytes.Compare(x.Root[:], y.Root[:]) < 0
}

// check is the claim every bundle makes: one origin, A before B, and no tree of which both are
// heads, as far as the proof shows.
func (e *Equivocation) check(originB string) error {
	if e.Origin != originB {
		return fmt.Errorf("%w: origins %q and %q", ErrNoEquivocation, e.Origin, originB)
	}
	if e.A.Size == e.B.Size {
		if len(e.Proof) != 0 {
			return fmt.Errorf("%w: a proof between checkpoints of one size", ErrNoEquivocation)
		}
		if e.A.Root == e.B.Root {
			return fmt.Errorf("%w: the same checkpoint twice", ErrNoEquivocation)
		}
		return nil
	}
	if want := consistencyProofLen(e.A.Size, e.B.Size); len(e.Proof) != want {
		return fmt.Errorf("%w: a proof of %d hashes between sizes %d and %d, which take %d",
			ErrNoEquivocation, len(e.Proof), e.A.Size, e.B.Size, want)
	}
	if VerifyConsistency(e.A.Size, e.B.Size, e.Proof, e.A.Root, e.B.Root) == nil {
		return fmt.Errorf("%w: the proof verifies", ErrNoEquivocation)
	}
	return nil
}

// consistencyProofLen is the number of hashes in the RFC 9162 consistency proof from size m to
// size n (m <= n): none when m is 0 or m = n. It follows SUBPROOF of RFC 9162 §2.1.4.1: each
// step down the tree adds one hash, and the walk ends at a subtree of size m, which adds its
// own hash unless it is the whole of the old tree.
func consistencyProofLen(m, n uint64) int {
	if m == 0 || m >= n {
		return 0
	}
	count, whole := 0, true
	for m != n {
		k := uint64(1) << (bits.Len64(n-1) - 1) // the largest power of two below n
		if m <= k {
			n = k
		} else {
			m, n, whole = m-k, n-k, false
		}
		count++
	}
	if !whole {
		count++
	}
	return count
}

// ParseEquivocation parses an equivocation bundle strictly and checks its claim (one origin,
// the canonical order, and that the proof, of the right length, fails), reading the notes'
// text without checking any signature: a gossip validator learns the origin from it and then
// calls VerifyEquivocation with that log's verifier.
func ParseEquivocation(data []byte) (*Equivocation, error) {
	if len(data) > MaxEquivocationBytes {
		return nil, errors.New("parsing equivocation: too long")
	}
	e, err := splitEquivocation(data)
	if err != nil {
		return nil, fmt.Errorf("parsing equivocation: %w", err)
	}
	ca, err := unverifiedCheckpoint(e.A.Raw)
	if err != nil {
		return nil, fmt.Errorf("parsing equivocation: note A: %w", err)
	}
	cb, err := unverifiedCheckpoint(e.B.Raw)
	if err != nil {
		return nil, fmt.Errorf("parsing equivocation: note B: %w", err)
	}
	e.Origin = ca.Origin
	e.A.Size, e.A.Root, e.B.Size, e.B.Root = ca.Size, ca.Root, cb.Size, cb.Root
	if !inOrder(e.A, e.B) {
		if e.A.Size != e.B.Size || e.A.Root != e.B.Root {
			return nil, errors.New("parsing equivocation: notes out of order")
		}
	}
	if err := e.check(cb.Origin); err != nil {
		return nil, fmt.Errorf("parsing equivocation: %w", err)
	}
	return e, nil
}

// VerifyEquivocation parses an equivocation bundle and checks both notes' signatures with v,
// the log's verifier: when it returns nil, the log signed two checkpoints that are not one
// tree (for EquivocationFailedProof, unless it can serve a proof between them that verifies).
func VerifyEquivocation(data []byte, v note.Verifier) (*Equivocation, error) {
	e, err := ParseEquivocation(data)
	if err != nil {
		return nil, err
	}
	for _, h := range []SignedHead{e.A, e.B} {
		c, err := ParseCheckpoint(h.Raw, v)
		if err != nil {
			return nil, fmt.Errorf("verifying equivocation: checkpoint of size %d: %w", h.Size, err)
		}
		if c.Size != h.Size || c.Root != h.Root {
			// Unreachable: ParseCheckpoint reads the same text unverifiedCheckpoint did.
			return nil, errors.New("verifying equivocation: checkpoint reads differently once verified")
		}
	}
	return e, nil
}

// splitEquivocation cuts a bundle into its notes and proof, checking every line's spelling.
func splitEquivocation(data []byte) (*Equivocation, error) {
	rest, ok := bytes.CutPrefix(data, []byte(EquivocationType+"\n"))
	if !ok {
		return nil, errors.New("no " + EquivocationType + " header")
	}
	var lens [2]int
	for i := range lens {
		line, r, err := cutLine(rest)
		if err != nil {
			return nil, err
		}
		n, err := strconv.Atoi(string(line))
		if err != nil || strconv.Itoa(n) != string(line) || n < 1 || n > MaxCheckpointBytes {
			return nil, fmt.Errorf("note length %q is not a canonical decimal in 1..%d", line, MaxCheckpointBytes)
		}
		lens[i], rest = n, r
	}
	e := &Equivocation{}
	for {
		line, r, err := cutLine(rest)
		if err != nil {
			return nil, err
		}
		rest = r
		if len(line) == 0 {
			break
		}
		h, err := base64Hash(line)
		if err != nil {
			return nil, fmt.Errorf("proof hash %d: %w", len(e.Proof), err)
		}
		if len(e.Proof) == MaxProofHashes {
			return nil, fmt.Errorf("more than %d proof hashes", MaxProofHashes)
		}
		e.Proof = append(e.Proof, h)
	}
	if len(rest) != lens[0]+lens[1] {
		return nil, fmt.Errorf("%d bytes of notes, the lengths say %d", len(rest), lens[0]+lens[1])
	}
	e.A.Raw, e.B.Raw = rest[:lens[0]:lens[0]], rest[lens[0]:]
	return e, nil
}

// cutLine returns the bytes before the next newline and those after it.
func cutLine(b []byte) (line, rest []byte, err error) {
	line, rest, ok := bytes.Cut(b, []byte("\n"))
	if !ok {
		return nil, nil, errors.New("unterminated line")
	}
	return line, rest, nil
}

// base64Hash decodes one hash written in canonical standard base64.
func base64Hash(s []byte) ([32]byte, error) {
	var h [32]byte
	raw, err := base64.StdEncoding.Strict().DecodeString(string(s))
	if err != nil || len(raw) != HashSize || base64.StdEncoding.EncodeToString(raw) != string(s) {
		return h, errors.New("not 32 bytes of canonical standard base64")
	}
	return [32]byte(raw), nil
}

// unverifiedCheckpoint reads a signed checkpoint note's text as ParseCheckpoint would, without
// a key: the note must be well formed and carry at least one signature line, every one in
// canonical base64.
func unverifiedCheckpoint(msg []byte) (Checkpoint, error) {
	_, err := note.Open(msg, note.VerifierList())
	var unv *note.UnverifiedNoteError
	if !errors.As(err, &unv) {
		return Checkpoint{}, fmt.Errorf("opening checkpoint: %w", err)
	}
	if err := canonicalSigs(unv.Note); err != nil {
		return Checkpoint{}, fmt.Errorf("parsing checkpoint: %w", err)
	}
	return ParseCheckpointText(unv.Note.Text)
}
