package wire

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"fmt"
	"slices"

	"golang.org/x/mod/sumdb/note"

	"github.com/histor-observer/histor/log/awr"
	"github.com/histor-observer/histor/log/format"
)

// HeadType is the first line of a head message.
const HeadType = "histor.head/v1"

// MaxHeadBytes bounds a head message: the type line, a head and a checkpoint at their bounds.
const MaxHeadBytes = len(HeadType) + 1 + format.MaxSTHBytes + 1 + format.MaxCheckpointBytes

// ErrSignature marks a well-formed message whose signature by the key it names does not
// verify (it wraps format.ErrSignature when that is where it came from).
var ErrSignature = format.ErrSignature

// Head is a verified head message: one tree head of one observer's log in both forms.
type Head struct {
	Raw        []byte // the whole message as received
	STH        *format.STH
	Checkpoint format.Checkpoint
	// CheckpointNote is the checkpoint as carried, with every signature line.
	CheckpointNote []byte
	// Cosigners names the known witnesses whose cosignature/v1 verified, sorted.
	Cosigners []string
}

// EncodeHead builds a head message from a histor.sth/v1 document and a checkpoint note.
func EncodeHead(sth, checkpoint []byte) []byte {
	b := make([]byte, 0, len(HeadType)+2+len(sth)+len(checkpoint))
	b = append(b, HeadType+"\n"...)
	b = append(b, sth...)
	b = append(b, '\n')
	return append(b, checkpoint...)
}

// SplitHead cuts a head message into its two documents and parses the head (not its
// signature), so a caller learns whose it claims to be and how large before paying for a
// signature check. The histor.sth/v1 document is canonical JSON and holds no newline.
func SplitHead(msg []byte) (sth *format.STH, sthRaw, checkpoint []byte, err error) {
	if len(msg) > MaxHeadBytes {
		return nil, nil, nil, errors.New("parsing head message: too long")
	}
	rest, ok := bytes.CutPrefix(msg, []byte(HeadType+"\n"))
	if !ok {
		return nil, nil, nil, fmt.Errorf("parsing head message: first line is not %q", HeadType)
	}
	sthRaw, checkpoint, ok = bytes.Cut(rest, []byte("\n"))
	if !ok {
		return nil, nil, nil, errors.New("parsing head message: no checkpoint")
	}
	if sth, err = format.ParseSTH(sthRaw); err != nil {
		return nil, nil, nil, fmt.Errorf("parsing head message: %w", err)
	}
	return sth, sthRaw, checkpoint, nil
}

// VerifyHead checks a head message of the log whose key is pub: the head's signature, the
// checkpoint's signature under origin (the checkpoint's own origin line when origin is ""),
// both naming the same tree, and the cosignature of every witness in witnesses whose line it
// carries. Lines by other keys are kept but not counted.
func VerifyHead(msg []byte, pub ed25519.PublicKey, origin string, witnesses []format.Cosigner) (*Head, error) {
	_, sthRaw, cpNote, err := SplitHead(msg)
	if err != nil {
		return nil, err
	}
	sth, err := format.VerifySTH(sthRaw, pub)
	if err != nil {
		return nil, fmt.Errorf("verifying head message: %w", err)
	}
	if sth.Log != awr.DIDKey(pub) {
		return nil, errors.New("verifying head message: the head names another log")
	}
	cp, cosigners, err := verifyCheckpoint(cpNote, pub, origin, witnesses)
	if err != nil {
		return nil, fmt.Errorf("verifying head message: %w", err)
	}
	if cp.Size != sth.TreeSize || cp.Root != sth.Root {
		return nil, errors.New("verifying head message: head and checkpoint name different trees")
	}
	return &Head{Raw: msg, STH: sth, Checkpoint: cp, CheckpointNote: cpNote, Cosigners: cosigners}, nil
}

func verifyCheckpoint(cpNote []byte, pub ed25519.PublicKey, origin string, witnesses []format.Cosigner) (format.Checkpoint, []string, error) {
	if origin == "" {
		text, _, _ := bytes.Cut(cpNote, []byte("\n"))
		origin = string(text)
	}
	v, err := format.NewVerifier(origin, pub)
	if err != nil {
		return format.Checkpoint{}, nil, err
	}
	cp, err := format.ParseCheckpoint(cpNote, v)
	if err != nil {
		return cp, nil, err
	}
	if len(witnesses) == 0 {
		return cp, nil, nil
	}
	list := []note.Verifier{v}
	for _, w := range witnesses {
		list = append(list, w.Verifier())
	}
	// ParseCheckpoint checked the log's line; opening again with the witnesses checks theirs.
	n, err := note.Open(cpNote, note.VerifierList(list...))
	if err != nil {
		return cp, nil, fmt.Errorf("checking cosignatures: %w", err)
	}
	var names []string
	for _, s := range n.Sigs {
		if s.Name != origin || s.Hash != v.KeyHash() {
			names = append(names, s.Name)
		}
	}
	slices.Sort(names)
	return cp, names, nil
}
