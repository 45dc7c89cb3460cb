package keys

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/mod/sumdb/note"
)

// Signature type bytes of c2sp.org/signed-note. Each goes into the key ID
// and the verifier key, so one public key yields distinct IDs per type.
const (
	typeEd25519       byte = 0x01
	typeCosignatureV1 byte = 0x04
)

// NameError reports a key name that C2SP signed-note does not allow: empty,
// containing a space or '+', or not valid UTF-8.
type NameError struct{ Name string }

func (e *NameError) Error() string { return fmt.Sprintf("invalid signed-note key name %q", e.Name) }

func checkName(name string) error {
	if name == "" || !utf8.ValidString(name) || strings.ContainsRune(name, '+') ||
		strings.IndexFunc(name, unicode.IsSpace) >= 0 {
		return &NameError{Name: name}
	}
	return nil
}

// KeyID is the signed-note key ID: the first four bytes, big-endian, of
// SHA-256(name ‖ "\n" ‖ sigType ‖ pub).
func KeyID(name string, sigType byte, pub []byte) uint32 {
	h := sha256.New()
	h.Write([]byte(name))
	h.Write([]byte{'\n', sigType})
	h.Write(pub)
	return binary.BigEndian.Uint32(h.Sum(nil))
}

// vkey formats "<name>+<hex key ID>+<base64(type ‖ pub)>".
func vkey(name string, sigType byte, pub ed25519.PublicKey) (string, error) {
	if err := checkName(name); err != nil {
		return "", err
	}
	if len(pub) != ed25519.PublicKeySize {
		return "", fmt.Errorf("formatting verifier key: public key is %d bytes, want %d", len(pub), ed25519.PublicKeySize)
	}
	typed := append([]byte{sigType}, pub...)
	return fmt.Sprintf("%s+%08x+%s", name, KeyID(name, sigType, pub),
		base64.StdEncoding.EncodeToString(typed)), nil
}

// NoteVerifierKey is the C2SP signed-note verifier key (Ed25519, type 0x01)
// under which name's checkpoints verify, as golang.org/x/mod/sumdb/note
// reads it.
func NoteVerifierKey(name string, pub ed25519.PublicKey) (string, error) {
	return vkey(name, typeEd25519, pub)
}

// CosignatureVerifierKey is the c2sp.org/tlog-cosignature verifier key
// (cosignature/v1, type 0x04) of a witness named name.
func CosignatureVerifierKey(name string, pub ed25519.PublicKey) (string, error) {
	return vkey(name, typeCosignatureV1, pub)
}

// noteSigner signs signed notes with an Ed25519 key (type 0x01).
type noteSigner struct {
	name string
	id   uint32
	priv ed25519.PrivateKey
}

func (s *noteSigner) Name() string    { return s.name }
func (s *noteSigner) KeyHash() uint32 { return s.id }
func (s *noteSigner) Sign(msg []byte) ([]byte, error) {
	return ed25519.Sign(s.priv, msg), nil
}

// NoteSigner returns a note.Signer for name and priv; its signatures verify
// under NoteVerifierKey(name, priv.Public()).
func NoteSigner(name string, priv ed25519.PrivateKey) (note.Signer, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	if len(priv) != ed25519.PrivateKeySize {
		return nil, errors.New("making note signer: not an Ed25519 private key")
	}
	pub := priv.Public().(ed25519.PublicKey)
	return &noteSigner{name: name, id: KeyID(name, typeEd25519, pub), priv: priv}, nil
}
