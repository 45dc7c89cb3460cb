package format

import (
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/mod/sumdb/note"

	"github.com/histor-observer/histor/log/keys"
)

// MaxCheckpointBytes bounds ParseCheckpoint's input; a checkpoint with a
// handful of cosignatures is well under 2 KiB, and one with the hundred
// signature lines note.Open allows still fits.
const MaxCheckpointBytes = 16 << 10

// Checkpoint is the text of a C2SP tlog-checkpoint as a HISTOR log writes it:
// origin, size and root, no extension lines.
type Checkpoint struct {
	Origin string
	Size   uint64
	Root   [32]byte
}

// Text renders the checkpoint body, the bytes the log's signature and every
// cosignature/v1 cover: origin, size, base64 root, each ending in "\n".
func (c Checkpoint) Text() string {
	return fmt.Sprintf("%s\n%d\n%s\n", c.Origin, c.Size, base64.StdEncoding.EncodeToString(c.Root[:]))
}

// NewVerifier returns the note verifier for a log's checkpoints: Ed25519,
// key name origin.
func NewVerifier(origin string, pub ed25519.PublicKey) (note.Verifier, error) {
	vkey, err := keys.NoteVerifierKey(origin, pub)
	if err != nil {
		return nil, fmt.Errorf("making verifier key: %w", err)
	}
	return note.NewVerifier(vkey)
}

// SignCheckpoint returns c as a signed note with one signature by s.
func SignCheckpoint(s note.Signer, c Checkpoint) ([]byte, error) {
	return note.Sign(&note.Note{Text: c.Text()}, s)
}

// ParseCheckpoint opens a signed checkpoint note with verifier and parses its
// text strictly: origin equal to the verifier's key name, canonical decimal
// size, standard base64 root, no extension lines, and canonical base64 in
// every signature line. Signatures by other keys (cosignatures) are allowed
// and left unchecked (Cosigner.Verifier checks a witness's line). A note
// whose signature by verifier fails is reported wrapping ErrSignature.
func ParseCheckpoint(msg []byte, verifier note.Verifier) (Checkpoint, error) {
	var c Checkpoint
	if len(msg) > MaxCheckpointBytes {
		return c, errors.New("parsing checkpoint: too long")
	}
	n, err := note.Open(msg, note.VerifierList(verifier))
	if err != nil {
		return c, fmt.Errorf("opening checkpoint: %w", openError(err))
	}
	if err := canonicalSigs(n); err != nil {
		return c, fmt.Errorf("parsing checkpoint: %w", err)
	}
	c, err = ParseCheckpointText(n.Text)
	if err != nil {
		return c, fmt.Errorf("parsing checkpoint: %w", err)
	}
	if c.Origin != verifier.Name() {
		return c, fmt.Errorf("parsing checkpoint: origin %q is not the key name %q", c.Origin, verifier.Name())
	}
	return c, nil
}

// openError keeps note.Open's error and marks a failed known signature as ErrSignature.
func openError(err error) error {
	var inv *note.InvalidSignatureError
	if errors.As(err, &inv) {
		return fmt.Errorf("%w: %w", ErrSignature, err)
	}
	return err
}

// canonicalSigs refuses a signature line whose base64 has another spelling than the
// canonical one, so one signed note has exactly one byte form.
func canonicalSigs(n *note.Note) error {
	for _, sig := range append(append([]note.Signature(nil), n.Sigs...), n.UnverifiedSigs...) {
		if err := canonicalBase64(sig.Base64); err != nil {
			return fmt.Errorf("signature by %s: %w", sig.Name, err)
		}
	}
	return nil
}

func canonicalBase64(s string) error {
	b, err := base64.StdEncoding.Strict().DecodeString(s)
	if err != nil || base64.StdEncoding.EncodeToString(b) != s {
		return errors.New("non-canonical base64")
	}
	return nil
}

// ParseCheckpointText parses a checkpoint body (the note text, signatures
// removed) strictly; see ParseCheckpoint.
func ParseCheckpointText(text string) (Checkpoint, error) {
	var c Checkpoint
	if len(text) > MaxCheckpointBytes {
		return c, errors.New("too long")
	}
	lines := strings.Split(text, "\n")
	if len(lines) != 4 || lines[3] != "" {
		return c, errors.New("want exactly origin, size and root lines")
	}
	c.Origin = lines[0]
	if !validKeyName(c.Origin) {
		return c, errors.New("bad origin")
	}
	size, err := strconv.ParseUint(lines[1], 10, 64)
	if err != nil || strconv.FormatUint(size, 10) != lines[1] {
		return c, errors.New("size is not a canonical decimal")
	}
	c.Size = size
	root, err := base64.StdEncoding.Strict().DecodeString(lines[2])
	if err != nil || len(root) != 32 || base64.StdEncoding.EncodeToString(root) != lines[2] {
		return c, errors.New("root is not 32 bytes of standard base64")
	}
	copy(c.Root[:], root)
	return c, nil
}

// validKeyName is the signed-note rule for a key name, which a checkpoint's
// origin must also meet to be its key's name: non-empty valid UTF-8 without
// spaces, control characters or "+".
func validKeyName(name string) bool {
	return name != "" && utf8.ValidString(name) && !strings.Contains(name, "+") &&
		strings.IndexFunc(name, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) < 0
}
