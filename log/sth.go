package log

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gowebpki/jcs"
)

// STHType is the type member of every HISTOR signed tree head; it is inside
// the signed bytes, so no other signed document can pass for a head.
const STHType = "histor.sth/v1"

// sthTimeLayout is HISTOR's timestamp form: UTC, whole seconds, "Z".
const sthTimeLayout = "2006-01-02T15:04:05Z"

// maxSafeInteger is the largest integer every JSON reader keeps exactly
// (AWR/2 canonical JSON refuses larger ones).
const maxSafeInteger = 1<<53 - 1

// maxSTHBytes bounds what ParseSTH reads; a real head is about 400 bytes.
const maxSTHBytes = 4096

var didKeyRE = regexp.MustCompile(`^did:key:z[1-9A-HJ-NP-Za-km-z]{40,60}$`)

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

// VerificationMethod returns HISTOR's verification method for a did:key: the
// DID, "#", and the DID's last colon-separated part.
func VerificationMethod(did string) string {
	return did + "#" + did[strings.LastIndexByte(did, ':')+1:]
}

// canonicalJSON marshals v and returns its RFC 8785 form.
func canonicalJSON(v any) ([]byte, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return jcs.Transform(raw)
}

func (s *STH) body() sthBody {
	return sthBody{
		Type:      STHType,
		Log:       s.Log,
		TreeSize:  s.TreeSize,
		RootHash:  hex.EncodeToString(s.Root[:]),
		Timestamp: s.Time.UTC().Format(sthTimeLayout),
	}
}

// signSTH returns the served document: the RFC 8785 bytes of the whole head,
// signature included (HISTOR verifies the parsed document, so any JSON form
// would do; the canonical one makes the served bytes reproducible).
func signSTH(key ed25519.PrivateKey, did string, size uint64, root [32]byte, t time.Time) ([]byte, error) {
	s := STH{Log: did, TreeSize: size, Root: root, Time: t}
	msg, err := canonicalJSON(s.body())
	if err != nil {
		return nil, fmt.Errorf("canonicalising head: %w", err)
	}
	doc := sthDoc{sthBody: s.body(), Signature: sthSignature{
		Alg:                "Ed25519",
		VerificationMethod: VerificationMethod(did),
		Value:              base64.RawURLEncoding.EncodeToString(ed25519.Sign(key, msg)),
	}}
	return canonicalJSON(doc)
}

// VerifySTH parses doc strictly and checks its signature under pub. It does
// not check that Log is the did:key of pub; callers that pinned a DID compare
// it themselves.
func VerifySTH(doc []byte, pub ed25519.PublicKey) (*STH, error) {
	s, err := ParseSTH(doc)
	if err != nil {
		return nil, err
	}
	if len(pub) != ed25519.PublicKeySize {
		return nil, errors.New("verifying head: bad public key length")
	}
	msg, err := canonicalJSON(s.body())
	if err != nil {
		return nil, fmt.Errorf("canonicalising head: %w", err)
	}
	if !ed25519.Verify(pub, msg, s.Signature) {
		return nil, errors.New("verifying head: signature does not verify")
	}
	return s, nil
}

// ParseSTH parses a histor.sth/v1 document strictly: exactly the expected
// members, no duplicates, canonical number, hex, timestamp and base64url
// forms. It does not check the signature (see VerifySTH).
func ParseSTH(doc []byte) (*STH, error) {
	members, err := strictObject(doc, maxSTHBytes)
	if err != nil {
		return nil, fmt.Errorf("parsing head: %w", err)
	}
	s, err := parseSTHMembers(members)
	if err != nil {
		return nil, fmt.Errorf("parsing head: %w", err)
	}
	return s, nil
}

func parseSTHMembers(m map[string]json.RawMessage) (*STH, error) {
	if err := exactMembers(m, "type", "log", "treeSize", "rootHash", "timestamp", "signature"); err != nil {
		return nil, err
	}
	var s STH
	typ, err := asciiString(m["type"])
	if err != nil || typ != STHType {
		return nil, fmt.Errorf("type is not %q", STHType)
	}
	if s.Log, err = asciiString(m["log"]); err != nil || !didKeyRE.MatchString(s.Log) {
		return nil, errors.New("log is not a did:key")
	}
	if s.TreeSize, err = safeUint(m["treeSize"]); err != nil {
		return nil, fmt.Errorf("treeSize: %w", err)
	}
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

func (s *STH) parseSignature(raw json.RawMessage) error {
	m, err := strictObject(raw, maxSTHBytes)
	if err != nil {
		return err
	}
	if err := exactMembers(m, "alg", "verificationMethod", "value"); err != nil {
		return err
	}
	if alg, err := asciiString(m["alg"]); err != nil || alg != "Ed25519" {
		return errors.New("alg is not Ed25519")
	}
	if s.VerificationMethod, err = asciiString(m["verificationMethod"]); err != nil ||
		s.VerificationMethod != VerificationMethod(s.Log) {
		return errors.New("verificationMethod does not name the log's key")
	}
	value, err := asciiString(m["value"])
	if err != nil {
		return errors.New("value is not a string")
	}
	// Strict: no padding, no stray bits, so one signature has one spelling.
	if s.Signature, err = base64.RawURLEncoding.Strict().DecodeString(value); err != nil ||
		len(s.Signature) != ed25519.SignatureSize {
		return errors.New("value is not a base64url Ed25519 signature")
	}
	return nil
}

// strictObject decodes one JSON object into its raw members, refusing invalid
// UTF-8, duplicate member names, trailing data and oversized input.
func strictObject(b []byte, limit int) (map[string]json.RawMessage, error) {
	if len(b) > limit {
		return nil, fmt.Errorf("longer than %d bytes", limit)
	}
	if !utf8.Valid(b) {
		return nil, errors.New("invalid UTF-8")
	}
	if err := noDuplicates(b); err != nil {
		return nil, err
	}
	var m map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&m); err != nil {
		return nil, err
	}
	if m == nil {
		return nil, errors.New("not an object")
	}
	if _, err := dec.Token(); err == nil {
		return nil, errors.New("trailing data")
	}
	return m, nil
}

// noDuplicates refuses an object (at any depth) naming a member twice;
// encoding/json would silently keep the last one.
func noDuplicates(b []byte) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	return walkValue(dec, 0)
}

func walkValue(dec *json.Decoder, depth int) error {
	if depth > 8 {
		return errors.New("nested too deep")
	}
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	switch tok {
	case json.Delim('{'):
		seen := map[string]bool{}
		for dec.More() {
			key, err := dec.Token()
			if err != nil {
				return err
			}
			name, _ := key.(string)
			if seen[name] {
				return fmt.Errorf("duplicate member %q", name)
			}
			seen[name] = true
			if err := walkValue(dec, depth+1); err != nil {
				return err
			}
		}
		_, err = dec.Token()
	case json.Delim('['):
		for dec.More() {
			if err := walkValue(dec, depth+1); err != nil {
				return err
			}
		}
		_, err = dec.Token()
	}
	return err
}

func exactMembers(m map[string]json.RawMessage, names ...string) error {
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

// asciiString decodes a JSON string that must be printable ASCII written
// without escapes, so the parsed value has exactly one spelling.
func asciiString(raw json.RawMessage) (string, error) {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return "", errors.New("not a string")
	}
	s := string(raw[1 : len(raw)-1])
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e || s[i] == '\\' || s[i] == '"' {
			return "", errors.New("not a plain ASCII string")
		}
	}
	return s, nil
}

// safeUint parses a JSON integer written canonically (no sign, fraction,
// exponent or leading zero) within ±(2^53−1).
func safeUint(raw json.RawMessage) (uint64, error) {
	s := string(raw)
	if s == "" || (len(s) > 1 && s[0] == '0') {
		return 0, errors.New("not a canonical integer")
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, errors.New("not a canonical integer")
		}
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil || n > maxSafeInteger {
		return 0, errors.New("integer out of range")
	}
	return n, nil
}

func lowerHex32(raw json.RawMessage) ([32]byte, error) {
	var h [32]byte
	s, err := asciiString(raw)
	if err != nil || len(s) != 64 || strings.ToLower(s) != s {
		return h, errors.New("not 64 lowercase hex digits")
	}
	if _, err := hex.Decode(h[:], []byte(s)); err != nil {
		return h, errors.New("not 64 lowercase hex digits")
	}
	return h, nil
}

func sthTime(raw json.RawMessage) (time.Time, error) {
	s, err := asciiString(raw)
	if err != nil {
		return time.Time{}, err
	}
	t, err := time.Parse(sthTimeLayout, s)
	if err != nil || t.Format(sthTimeLayout) != s {
		return time.Time{}, errors.New("not YYYY-MM-DDTHH:MM:SSZ")
	}
	return t, nil
}
