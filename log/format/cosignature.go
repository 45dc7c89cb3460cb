package format

import (
	"crypto/ed25519"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"golang.org/x/mod/sumdb/note"

	"github.com/histor-observer/histor/log/keys"
)

// c2sp.org/tlog-cosignature, Ed25519 form (cosignature/v1).
const (
	// CosignatureV1Type is the signed-note signature type byte of cosignature/v1; it is part
	// of the key ID, so a witness's cosignature key never has the ID of a log key.
	CosignatureV1Type byte = 0x04
	// cosignatureBytes is a line's decoded signature: key ID, timestamp, Ed25519 signature.
	cosignatureBytes = 4 + 8 + ed25519.SignatureSize
	// MaxCosignatures bounds ParseCosignatures, as note.Open bounds signature lines.
	MaxCosignatures = 100
	// sigPrefix opens every signed-note signature line: U+2014 and a space.
	sigPrefix = "\u2014 "
)

// Cosignature is one parsed cosignature/v1 signature line. Parsing checks its shape only;
// Cosigner.Verify checks whose it is and what it signs.
type Cosignature struct {
	Name      string // the cosigner's key name
	KeyID     uint32 // SHA-256(name ‖ "\n" ‖ 0x04 ‖ public key)[:4]
	Time      uint64 // POSIX seconds at which it was made, at most 2^63−1
	Signature []byte // Ed25519 over CosignatureMessage, 64 bytes
}

// Line renders the signature line, without its final newline.
func (s Cosignature) Line() string {
	b := binary.BigEndian.AppendUint32(nil, s.KeyID)
	b = binary.BigEndian.AppendUint64(b, s.Time)
	b = append(b, s.Signature...)
	return sigPrefix + s.Name + " " + base64.StdEncoding.EncodeToString(b)
}

// CosignatureMessage is what a cosignature/v1 made at time t over c signs: a header line
// that no other signature shares, the time line, then the checkpoint body.
func CosignatureMessage(c Checkpoint, t uint64) []byte {
	return []byte("cosignature/v1\ntime " + strconv.FormatUint(t, 10) + "\n" + c.Text())
}

// ParseCosignature parses one signature line ("— <name> <base64>", no final newline)
// strictly: a valid key name, canonical standard base64 of exactly 76 bytes, and a time that
// fits in 63 bits.
func ParseCosignature(line string) (Cosignature, error) {
	var s Cosignature
	rest, ok := strings.CutPrefix(line, sigPrefix)
	if !ok {
		return s, errors.New("parsing cosignature: not a signature line")
	}
	name, b64, ok := strings.Cut(rest, " ")
	if !ok || !validKeyName(name) {
		return s, errors.New("parsing cosignature: bad key name")
	}
	raw, err := base64.StdEncoding.Strict().DecodeString(b64)
	if err != nil || base64.StdEncoding.EncodeToString(raw) != b64 {
		return s, errors.New("parsing cosignature: signature is not canonical base64")
	}
	if len(raw) != cosignatureBytes {
		return s, fmt.Errorf("parsing cosignature: %d signature bytes, want %d", len(raw), cosignatureBytes)
	}
	s.Name, s.KeyID, s.Time = name, binary.BigEndian.Uint32(raw), binary.BigEndian.Uint64(raw[4:])
	if s.Time > math.MaxInt64 {
		return s, errors.New("parsing cosignature: time beyond 2^63-1")
	}
	s.Signature = raw[12:]
	return s, nil
}

// ParseCosignatures parses a block of signature lines, each ending in "\n", as a witness
// answers add-checkpoint with: at least one, at most MaxCosignatures.
func ParseCosignatures(body []byte) ([]Cosignature, error) {
	text := string(body)
	if len(body) > MaxCheckpointBytes {
		return nil, errors.New("parsing cosignatures: too long")
	}
	if !strings.HasSuffix(text, "\n") {
		return nil, errors.New("parsing cosignatures: not newline-terminated lines")
	}
	lines := strings.Split(text[:len(text)-1], "\n")
	if len(lines) > MaxCosignatures {
		return nil, fmt.Errorf("parsing cosignatures: %d lines, at most %d", len(lines), MaxCosignatures)
	}
	out := make([]Cosignature, 0, len(lines))
	for i, l := range lines {
		s, err := ParseCosignature(l)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", i+1, err)
		}
		out = append(out, s)
	}
	return out, nil
}

// Cosigner is a witness as a verifier knows it: its key name and Ed25519 public key.
type Cosigner struct {
	Name string
	Key  ed25519.PublicKey
}

// NewCosigner checks name and key and returns the cosigner they make.
func NewCosigner(name string, key ed25519.PublicKey) (Cosigner, error) {
	if !validKeyName(name) {
		return Cosigner{}, fmt.Errorf("making cosigner: bad key name %q", name)
	}
	if len(key) != ed25519.PublicKeySize {
		return Cosigner{}, fmt.Errorf("making cosigner %s: public key is %d bytes, want %d", name, len(key), ed25519.PublicKeySize)
	}
	return Cosigner{Name: name, Key: key}, nil
}

// ParseCosignerKey parses a cosignature/v1 verifier key,
// "<name>+<8 lowercase hex key ID>+<base64(0x04 ‖ public key)>", strictly: the key ID must be
// the one the name and key give.
func ParseCosignerKey(vkey string) (Cosigner, error) {
	name, rest, ok1 := strings.Cut(vkey, "+")
	id, b64, ok2 := strings.Cut(rest, "+")
	if !ok1 || !ok2 {
		return Cosigner{}, errors.New("parsing cosigner key: not <name>+<hex id>+<key>")
	}
	raw, err := base64.StdEncoding.Strict().DecodeString(b64)
	if err != nil || base64.StdEncoding.EncodeToString(raw) != b64 ||
		len(raw) != 1+ed25519.PublicKeySize || raw[0] != CosignatureV1Type {
		return Cosigner{}, errors.New("parsing cosigner key: not a cosignature/v1 Ed25519 key")
	}
	w, err := NewCosigner(name, ed25519.PublicKey(raw[1:]))
	if err != nil {
		return Cosigner{}, fmt.Errorf("parsing cosigner key: %w", err)
	}
	if want := fmt.Sprintf("%08x", w.KeyID()); id != want {
		return Cosigner{}, fmt.Errorf("parsing cosigner key: key ID %s, the name and key give %s", id, want)
	}
	return w, nil
}

// KeyID is the cosigner's signed-note key ID.
func (w Cosigner) KeyID() uint32 { return keys.KeyID(w.Name, CosignatureV1Type, w.Key) }

// Matches reports whether s claims to be by w (name and key ID); a verifier ignores the lines
// of cosigners it does not know.
func (w Cosigner) Matches(s Cosignature) bool { return s.Name == w.Name && s.KeyID == w.KeyID() }

// Verify checks that s is w's cosignature/v1 over c. A line by someone else is refused
// without checking; a signature that does not verify is reported wrapping ErrSignature.
func (w Cosigner) Verify(c Checkpoint, s Cosignature) error {
	if !w.Matches(s) {
		return fmt.Errorf("verifying cosignature: by %s (%08x), not by %s (%08x)", s.Name, s.KeyID, w.Name, w.KeyID())
	}
	if len(w.Key) != ed25519.PublicKeySize || !ed25519.Verify(w.Key, CosignatureMessage(c, s.Time), s.Signature) {
		return fmt.Errorf("verifying cosignature by %s over %s at size %d: %w", w.Name, c.Origin, c.Size, ErrSignature)
	}
	return nil
}

// Verifier returns w as a note.Verifier, so note.Open can check w's line in a cosigned
// checkpoint beside the log's own signature. It accepts only checkpoint bodies
// ParseCheckpointText accepts.
func (w Cosigner) Verifier() note.Verifier { return cosignerVerifier{w} }

type cosignerVerifier struct{ w Cosigner }

func (v cosignerVerifier) Name() string    { return v.w.Name }
func (v cosignerVerifier) KeyHash() uint32 { return v.w.KeyID() }

// Verify gets the note text and the signature after its key ID: timestamp ‖ Ed25519.
func (v cosignerVerifier) Verify(msg, sig []byte) bool {
	if len(sig) != cosignatureBytes-4 {
		return false
	}
	c, err := ParseCheckpointText(string(msg))
	if err != nil {
		return false
	}
	s := Cosignature{Name: v.w.Name, KeyID: v.w.KeyID(), Time: binary.BigEndian.Uint64(sig), Signature: sig[8:]}
	return s.Time <= math.MaxInt64 && v.w.Verify(c, s) == nil
}

// SignCosignature makes name's cosignature/v1 over c at time t (POSIX seconds) with key.
func SignCosignature(name string, key ed25519.PrivateKey, c Checkpoint, t uint64) (Cosignature, error) {
	if len(key) != ed25519.PrivateKeySize {
		return Cosignature{}, errors.New("signing cosignature: not an Ed25519 private key")
	}
	w, err := NewCosigner(name, key.Public().(ed25519.PublicKey))
	if err != nil {
		return Cosignature{}, fmt.Errorf("signing cosignature: %w", err)
	}
	if t > math.MaxInt64 {
		return Cosignature{}, errors.New("signing cosignature: time beyond 2^63-1")
	}
	sig := ed25519.Sign(key, CosignatureMessage(c, t))
	return Cosignature{Name: name, KeyID: w.KeyID(), Time: t, Signature: sig}, nil
}
