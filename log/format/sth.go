package format

import (
	"crypto/ed25519"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/histor-observer/histor/log/awr"
	"github.com/histor-observer/histor/log/canon"
)

// STHType is the type member of every HISTOR signed tree head; it is inside
// the signed bytes, so no other signed document can pass for a head.
const STHType = "histor.sth/v1"

// ReceiptsSTHType is the type member of the heads of the receipts log,
// HISTOR's second tree; signed like an STHType head, and refused as one.
const ReceiptsSTHType = "histor.receipts-sth/v1"

// sthTimeLayout is HISTOR's timestamp form: UTC, whole seconds, "Z".
const sthTimeLayout = "2006-01-02T15:04:05Z"

// MaxSTHBytes bounds what ParseSTH reads; a real head is about 400 bytes.
const MaxSTHBytes = 4096

var didKeyRE = regexp.MustCompile(`^did:key:z[1-9A-HJ-NP-Za-km-z]{40,60}$`)

// ErrSignature marks a well-formed signed input whose signature does not verify under the
// key it was checked against. A witness tells it apart from a malformed input (403, not 400).
var ErrSignature = errors.New("signature does not verify")

// STH is a parsed histor.sth/v1 document.
type STH struct {
	Log                string // did:key of the log
	TreeSize           uint64
	Root               [32]byte
	Time               time.Time // UTC, whole seconds
	VerificationMethod string    // Log + "#" + Log without "did:key:"
	Signature          []byte    // Ed25519, 64 bytes
}

// sthBody is the signed part of a head; JSON member order does not matter
// because the bytes are canonicalised before signing.
type sthBody struct {
	Type      string `json:"type"`
	Log       string `json:"log"`
	TreeSize  uint64 `json:"treeSize"`
	RootHash  string `json:"rootHash"`
	Timestamp string `json:"timestamp"`
}

type sthSignature struct {
	Alg                string `json:"alg"`
	VerificationMethod string `json:"verificationMethod"`
	Value              string `json:"value"`
}

type sthDoc struct {
	sthBody
	Signature sthSignature `json:"signature"`
}

func (s *STH) body(typ string) sthBody {
	return sthBody{
		Type:      typ,
		Log:       s.Log,
		TreeSize:  s.TreeSize,
		RootHash:  hex.EncodeToString(s.Root[:]),
		Timestamp: s.Time.UTC().Format(sthTimeLayout),
	}
}

// SignSTH returns the served document: the RFC 8785 bytes of the whole head,
// signature included (HISTOR verifies the parsed document, so any JSON form
// would do; the canonical one makes the served bytes reproducible). t is cut
// to whole seconds.
func SignSTH(key ed25519.PrivateKey, did string, size uint64, root [32]byte, t time.Time) ([]byte, error) {
	return SignTypedSTH(STHType, key, did, size, root, t)
}

// SignTypedSTH is SignSTH for a head whose type member is typ (STHType or
// ReceiptsSTHType).
func SignTypedSTH(typ string, key ed25519.PrivateKey, did string, size uint64, root [32]byte, t time.Time) ([]byte, error) {
	s := STH{Log: did, TreeSize: size, Root: root, Time: t}
	msg, err := canon.Marshal(s.body(typ))
	if err != nil {
		return nil, fmt.Errorf("canonicalising head: %w", err)
	}
	doc := sthDoc{sthBody: s.body(typ), Signature: sthSignature{
		Alg:                "Ed25519",
		VerificationMethod: awr.VerificationMethod(did),
		Value:              base64.RawURLEncoding.EncodeToString(ed25519.Sign(key, msg)),
	}}
	return canon.Marshal(doc)
}

// VerifySTH parses doc strictly and checks its signature under pub; a signature that does
// not verify is reported wrapping ErrSignature. It does not check that Log is the did:key of
// pub; callers that pinned a DID compare it themselves.
func VerifySTH(doc []byte, pub ed25519.PublicKey) (*STH, error) {
	return VerifyTypedSTH(STHType, doc, pub)
}

// VerifyTypedSTH is VerifySTH for a head whose type member must be typ.
func VerifyTypedSTH(typ string, doc []byte, pub ed25519.PublicKey) (*STH, error) {
	s, err := ParseTypedSTH(typ, doc)
	if err != nil {
		return nil, err
	}
	if len(pub) != ed25519.PublicKeySize {
		return nil, errors.New("verifying head: bad public key length")
	}
	msg, err := canon.Marshal(s.body(typ))
	if err != nil {
		return nil, fmt.Errorf("canonicalising head: %w", err)
	}
	if !ed25519.Verify(pub, msg, s.Signature) {
		return nil, fmt.Errorf("verifying head: %w", ErrSignature)
	}
	return s, nil
}

// ParseSTH parses a histor.sth/v1 document strictly (AWR/2 canonical JSON
// rules: no duplicate members, no fraction or exponent, integers within
// ±(2^53−1), valid UTF-8), with exactly the expected members in their
// canonical forms. It does not check the signature (see VerifySTH).
func ParseSTH(doc []byte) (*STH, error) { return ParseTypedSTH(STHType, doc) }

// ParseTypedSTH is ParseSTH for a head whose type member must be typ.
func ParseTypedSTH(typ string, doc []byte) (*STH, error) {
	v, err := canon.ParseWith(doc, canon.Limits{MaxDepth: 2, MaxBytes: MaxSTHBytes})
	if err != nil {
		return nil, fmt.Errorf("parsing head: %w", err)
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, errors.New("parsing head: not an object")
	}
	s, err := parseSTHMembers(m, typ)
	if err != nil {
		return nil, fmt.Errorf("parsing head: %w", err)
	}
	return s, nil
}

func parseSTHMembers(m map[string]any, typ string) (*STH, error) {
	if err := exactMembers(m, "type", "log", "treeSize", "rootHash", "timestamp", "signature"); err != nil {
		return nil, err
	}
	var s STH
	var ok bool
	if t, _ := m["type"].(string); t != typ {
		return nil, fmt.Errorf("type is not %q", typ)
	}
	if s.Log, ok = m["log"].(string); !ok || !didKeyRE.MatchString(s.Log) {
		return nil, errors.New("log is not a did:key")
	}
	size, ok := m["treeSize"].(int64)
	if !ok || size < 0 {
		return nil, errors.New("treeSize is not a non-negative integer")
	}
	s.TreeSize = uint64(size)
	var err error
	if s.Root, err = lowerHex32(m["rootHash"]); err != nil {
		return nil, fmt.Errorf("rootHash: %w", err)
	}
	if s.Time, err = sthTime(m["timestamp"]); err != nil {
		return nil, fmt.Errorf("timestamp: %w", err)
	}
	if err := s.parseSignature(m["signature"]); err != nil {
		return nil, fmt.Errorf("signature: %w", err)
	}
	return &s, nil
}

func (s *STH) parseSignature(v any) error {
	m, ok := v.(map[string]any)
	if !ok {
		return errors.New("not an object")
	}
	if err := exactMembers(m, "alg", "verificationMethod", "value"); err != nil {
		return err
	}
	if alg, _ := m["alg"].(string); alg != "Ed25519" {
		return errors.New("alg is not Ed25519")
	}
	if s.VerificationMethod, ok = m["verificationMethod"].(string); !ok || s.VerificationMethod != awr.VerificationMethod(s.Log) {
		return errors.New("verificationMethod does not name the log's key")
	}
	value, _ := m["value"].(string)
	var err error
	// Strict: no padding, no stray bits, so one signature has one spelling.
	if s.Signature, err = base64.RawURLEncoding.Strict().DecodeString(value); err != nil ||
		len(s.Signature) != ed25519.SignatureSize {
		return errors.New("value is not a base64url Ed25519 signature")
	}
	return nil
}

func exactMembers(m map[string]any, names ...string) error {
	for _, n := range names {
		if _, ok := m[n]; !ok {
			return fmt.Errorf("member %q missing", n)
		}
	}
	if len(m) != len(names) {
		return errors.New("unexpected members")
	}
	return nil
}

func lowerHex32(v any) ([32]byte, error) {
	var h [32]byte
	s, _ := v.(string)
	if len(s) != 64 || strings.ToLower(s) != s {
		return h, errors.New("not 64 lowercase hex digits")
	}
	if _, err := hex.Decode(h[:], []byte(s)); err != nil {
		return h, errors.New("not 64 lowercase hex digits")
	}
	return h, nil
}

func sthTime(v any) (time.Time, error) {
	s, _ := v.(string)
	t, err := time.Parse(sthTimeLayout, s)
	if err != nil || t.Format(sthTimeLayout) != s {
		return time.Time{}, errors.New("not YYYY-MM-DDTHH:MM:SSZ")
	}
	return t, nil
}
