package awr

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/histor-observer/histor/log/canon"
)

// The only proof this package makes or accepts (W3C vc-di-eddsa §3.3).
const (
	ProofType    = "DataIntegrityProof"
	Cryptosuite  = "eddsa-jcs-2022"
	ProofPurpose = "assertionMethod"
)

// timeLayout is RFC 3339 in UTC at second precision, as AWR/2 §3.1 writes
// every timestamp.
const timeLayout = "2006-01-02T15:04:05Z"

// FormatTime writes t the way AWR/2 documents carry timestamps.
func FormatTime(t time.Time) string { return t.UTC().Format(timeLayout) }

// proofMembers lists what a proof may carry. Anything else (expires,
// domain, challenge, previousProof…) would need checks this verifier does
// not make, so it is refused rather than ignored.
var proofMembers = []string{"@context", "type", "cryptosuite", "created", "verificationMethod", "proofPurpose", "proofValue"}

// Sign adds an eddsa-jcs-2022 proof made with key at time created to doc
// and returns the signed document's RFC 8785 bytes. doc must not carry a
// proof already, and if it names an issuer, the issuer must be key's
// did:key: Sign refuses to make a document its own Verify would refuse for
// either reason.
func Sign(doc map[string]any, key ed25519.PrivateKey, created time.Time) ([]byte, error) {
	if len(key) != ed25519.PrivateKeySize {
		return nil, fmt.Errorf("signing document: not an Ed25519 private key")
	}
	tree, err := normalize(doc)
	if err != nil {
		return nil, fmt.Errorf("signing document: %w", err)
	}
	if _, ok := tree["proof"]; ok {
		return nil, fmt.Errorf("signing document: it already carries a proof")
	}
	did := DIDKey(key.Public().(ed25519.PublicKey))
	if id, ok := issuerID(tree["issuer"]); ok && id != did {
		return nil, fmt.Errorf("signing document: issuer %s is not the signing key %s", quoted(id), did)
	}
	signed, err := signTree(tree, proofOptions(tree, did, created), key)
	if err != nil {
		return nil, fmt.Errorf("signing document: %w", err)
	}
	return signed, nil
}

// signTree signs doc (which has no proof) under options and returns the
// RFC 8785 bytes of doc with the finished proof as its "proof" member:
// canon.Encode of that document, made without encoding the unsecured
// document a second time. Each member's bytes in an RFC 8785 object depend
// on that member alone and members appear in CompareUTF16 order, so the
// signed bytes are the unsecured bytes hashData needs with the proof
// member inserted at its place.
func signTree(doc, options map[string]any, key ed25519.PrivateKey) ([]byte, error) {
	cb, err := canon.Encode(proofConfig(doc, options))
	if err != nil {
		return nil, fmt.Errorf("canonicalizing proof configuration: %w", err)
	}
	db, at, err := encodeOpen(doc, "proof")
	if err != nil {
		return nil, fmt.Errorf("canonicalizing document: %w", err)
	}
	proof := maps1(options)
	proof["proofValue"] = "z" + base58Encode(ed25519.Sign(key, hashBytes(cb, db)))
	return insertMember(db, at, "proof", proof)
}

// encodeOpen is canon.Encode of the object m, which has no member called
// name, and the offset in its bytes where that member would begin were it
// added: before the first member name sorts ahead of, else at the closing
// brace.
func encodeOpen(m map[string]any, name string) ([]byte, int, error) {
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	slices.SortFunc(names, canon.CompareUTF16)
	out := append(make([]byte, 0, 4096), '{')
	at := -1
	for i, k := range names {
		if i > 0 {
			out = append(out, ',')
		}
		if at < 0 && canon.CompareUTF16(name, k) < 0 {
			at = len(out)
		}
		var err error
		if out, err = canon.Append(out, k); err != nil {
			return nil, 0, err
		}
		out = append(out, ':')
		if out, err = canon.Append(out, m[k]); err != nil {
			return nil, 0, err
		}
	}
	if at < 0 {
		at = len(out)
	}
	return append(out, '}'), at, nil
}

// insertMember adds the member name: value to obj, the bytes of an encoded
// object, at offset at as encodeOpen gives it.
func insertMember(obj []byte, at int, name string, value any) ([]byte, error) {
	member, err := canon.Append(nil, name)
	if err != nil {
		return nil, err
	}
	if member, err = canon.Append(append(member, ':'), value); err != nil {
		return nil, err
	}
	out := make([]byte, 0, len(obj)+len(member)+1)
	out = append(out, obj[:at]...)
	switch {
	case at < len(obj)-1: // a member follows
		out = append(append(out, member...), ',')
	case at > 1: // the last of several
		out = append(append(out, ','), member...)
	default: // the only member
		out = append(out, member...)
	}
	return append(out, obj[at:]...), nil
}

// normalize turns any JSON-marshalable map into the tree canon.Parse would
// give for its encoding/json bytes, so signing and verifying see the same
// values. The documents this package builds hold only a few Go types, and
// those are converted directly (see treeOf); a document holding anything
// else, or anything the direct conversion cannot vouch for, takes the JSON
// round trip in normalizeJSON, so every caller gets exactly the tree (or the
// error) that round trip gives.
func normalize(doc map[string]any) (map[string]any, error) {
	if doc != nil {
		c := treeOf{budget: canon.DefaultLimits.MaxBytes}
		if m, ok := c.object(doc, 1); ok {
			return m, nil
		}
	}
	return normalizeJSON(doc)
}

// normalizeJSON is normalize by way of encoding/json: marshal, then parse
// strictly. Parsing encoding/json's output strictly is enough: canonical
// bytes parse to the same tree, so there is no need to encode and parse
// twice.
func normalizeJSON(doc map[string]any) (map[string]any, error) {
	b, err := json.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("encoding json: %w", err)
	}
	v, err := canon.Parse(b)
	if err != nil {
		return nil, err
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("the document is not a JSON object")
	}
	return m, nil
}

// treeOf copies a Go value into the tree canon.Parse would return for its
// json.Marshal bytes, without making those bytes. It knows map[string]any,
// []any, []string, []map[string]any, string, bool, nil, int and int64, and
// reports false, sending the caller to normalizeJSON, for anything else and
// for every case where the round trip would change a value or refuse it:
// invalid UTF-8 (encoding/json writes U+FFFD for it, and two keys could
// then collide), integers beyond ±(2^53−1), nesting deeper than
// canon.DefaultLimits allows, and documents whose JSON could exceed its
// byte bound. A nil slice or map is JSON null, as encoding/json writes it.
type treeOf struct {
	// budget is what is left of canon.DefaultLimits.MaxBytes after an upper
	// bound on the encoding/json bytes of everything converted so far: a
	// string byte never takes more than six bytes (\u00XX, \u003c, …).
	budget int
}

func (c *treeOf) spend(n int) bool {
	c.budget -= n
	return c.budget >= 0
}

func (c *treeOf) str(s string) bool {
	return c.spend(6*len(s)+2) && utf8.ValidString(s)
}

func (c *treeOf) value(v any, depth int) (any, bool) {
	switch x := v.(type) {
	case nil:
		return nil, c.spend(4)
	case bool:
		return x, c.spend(5)
	case string:
		return x, c.str(x)
	case int:
		return c.integer(int64(x))
	case int64:
		return c.integer(x)
	case map[string]any:
		if x == nil {
			return nil, c.spend(4)
		}
		return c.object(x, depth)
	case []any:
		return sliceOf(c, x, depth)
	case []string:
		return sliceOf(c, x, depth)
	case []map[string]any:
		return sliceOf(c, x, depth)
	}
	return nil, false
}

// sliceOf converts a slice of any element type value knows into an array
// (nil is null).
func sliceOf[T any](c *treeOf, xs []T, depth int) (any, bool) {
	if xs == nil {
		return nil, c.spend(4)
	}
	if !c.enter(len(xs), depth) {
		return nil, false
	}
	out := make([]any, len(xs))
	for i, e := range xs {
		var ok bool
		if out[i], ok = c.value(e, depth+1); !ok {
			return nil, false
		}
	}
	return out, true
}

func (c *treeOf) integer(n int64) (any, bool) {
	return n, c.spend(20) && n <= canon.MaxSafeInteger && n >= -canon.MaxSafeInteger
}

// enter accounts for a container of n entries at depth (the top-level
// document is depth 1): its brackets and separators, and the depth bound.
func (c *treeOf) enter(n, depth int) bool {
	return depth <= canon.DefaultLimits.MaxDepth && c.spend(2+n)
}

func (c *treeOf) object(m map[string]any, depth int) (map[string]any, bool) {
	if !c.enter(2*len(m), depth) {
		return nil, false
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		if !c.str(k) {
			return nil, false
		}
		w, ok := c.value(v, depth+1)
		if !ok {
			return nil, false
		}
		out[k] = w
	}
	return out, true
}

// proofOptions is the proof without proofValue. It carries the document's
// @context, as AWR/2 §6.2 step 9 requires, so generic eddsa-jcs-2022
// verifiers that rebuild the configuration from the proof alone agree.
func proofOptions(doc map[string]any, did string, created time.Time) map[string]any {
	p := map[string]any{
		"type":               ProofType,
		"cryptosuite":        Cryptosuite,
		"created":            FormatTime(created),
		"verificationMethod": VerificationMethod(did),
		"proofPurpose":       ProofPurpose,
	}
	if ctx, ok := doc["@context"]; ok {
		p["@context"] = ctx
	}
	return p
}

// hashData is SHA-256(JCS(proofConfig)) ‖ SHA-256(JCS(unsecured document)),
// proof configuration first (vc-di-eddsa §3.3.4; AWR/2 §6.2 step 6).
func hashData(doc, proof map[string]any) ([]byte, error) {
	unsecured := maps1(doc)
	delete(unsecured, "proof")
	cb, err := canon.Encode(proofConfig(doc, proof))
	if err != nil {
		return nil, fmt.Errorf("canonicalizing proof configuration: %w", err)
	}
	db, err := canon.Encode(unsecured)
	if err != nil {
		return nil, fmt.Errorf("canonicalizing document: %w", err)
	}
	return hashBytes(cb, db), nil
}

// proofConfig is the proof minus proofValue with the document's @context,
// whether or not the serialized proof carried one.
func proofConfig(doc, proof map[string]any) map[string]any {
	config := maps1(proof)
	delete(config, "proofValue")
	if ctx, ok := doc["@context"]; ok {
		config["@context"] = ctx
	}
	return config
}

// hashBytes is hashData's result from the two canonical encodings.
func hashBytes(config, unsecured []byte) []byte {
	ch, dh := sha256.Sum256(config), sha256.Sum256(unsecured)
	return slices.Concat(ch[:], dh[:])
}

// maps1 is a one-level copy, enough because callers only add or remove
// top-level members.
func maps1(m map[string]any) map[string]any {
	out := make(map[string]any, len(m)+1)
	for k, v := range m {
		out[k] = v
	}
	return out
}

// issuerID reads a VC issuer: a string, or an object with a string id.
func issuerID(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case map[string]any:
		id, ok := x["id"].(string)
		return id, ok
	}
	return "", false
}
