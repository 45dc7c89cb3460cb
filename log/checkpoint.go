package log

import (
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/mod/sumdb/note"

	"github.com/histor-observer/histor/log/keys"
)

// maxCheckpointBytes bounds ParseCheckpoint's input; a checkpoint with a
// handful of cosignatures is well under 2 KiB.
const maxCheckpointBytes = 16 << 10

// Checkpoint is the text of a C2SP tlog-checkpoint.
type Checkpoint struct {
	Origin string
	Size   uint64
	Root   [32]byte
}

// text renders the checkpoint body: origin, size, base64 root, nothing else.
func (c Checkpoint) text() string {
	return fmt.Sprintf("%s\n%d\n%s\n", c.Origin, c.Size, base64.StdEncoding.EncodeToString(c.Root[:]))
}

// NewVerifier returns the note verifier for a log's checkpoints.
func NewVerifier(origin string, pub ed25519.PublicKey) (note.Verifier, error) {
	vkey, err := keys.NoteVerifierKey(origin, pub)
	if err != nil {
		return nil, fmt.Errorf("making verifier key: %w", err)
	}
	return note.NewVerifier(vkey)
}

func signCheckpoint(s note.Signer, c Checkpoint) ([]byte, error) {
	return note.Sign(&note.Note{Text: c.text()}, s)
}

// ParseCheckpoint opens a signed checkpoint note with verifier and parses its
// text strictly: origin equal to the verifier's key name, canonical decimal
// size, standard base64 root, no extension lines, and canonical base64 in
// every signature line. Signatures by other keys (cosignatures) are allowed.
func ParseCheckpoint(msg []byte, verifier note.Verifier) (Checkpoint, error) {
	var c Checkpoint
	if len(msg) > maxCheckpointBytes {
		return c, errors.New("parsing checkpoint: too long")
	}
	n, err := note.Open(msg, note.VerifierList(verifier))
	if err != nil {
		return c, fmt.Errorf("opening checkpoint: %w", err)
	}
	for _, sig := range append(append([]note.Signature(nil), n.Sigs...), n.UnverifiedSigs...) {
		if err := canonicalBase64(sig.Base64); err != nil {
			return c, fmt.Errorf("parsing checkpoint signature by %s: %w", sig.Name, err)
		}
	}
	c, err = parseCheckpointText(n.Text)
	if err != nil {
		return c, fmt.Errorf("parsing checkpoint: %w", err)
	}
	if c.Origin != verifier.Name() {
		return c, fmt.Errorf("parsing checkpoint: origin %q is not the key name %q", c.Origin, verifier.Name())
	}
	return c, nil
}

func canonicalBase64(s string) error {
	b, err := base64.StdEncoding.Strict().DecodeString(s)
	if err != nil || base64.StdEncoding.EncodeToString(b) != s {
		return errors.New("non-canonical base64")
	}
	return nil
}

func parseCheckpointText(text string) (Checkpoint, error) {
	var c Checkpoint
	lines := strings.Split(text, "\n")
	if len(lines) != 4 || lines[3] != "" {
		return c, errors.New("want exactly origin, size and root lines")
	}
	c.Origin = lines[0]
	if c.Origin == "" || strings.ContainsAny(c.Origin, " +") {
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
