package awr

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/histor-observer/histor/log/canon"
)

// signJSON is Sign as it was before normalize converted documents directly
// and before the signed bytes were spliced together: every step goes
// through encoding/json, canon.Parse and canon.Encode of the whole tree.
// The tests below hold the current Sign to its bytes.
func signJSON(doc map[string]any, key ed25519.PrivateKey, created time.Time) ([]byte, error) {
	if len(key) != ed25519.PrivateKeySize {
		return nil, fmt.Errorf("signing document: not an Ed25519 private key")
	}
	tree, err := normalizeJSON(doc)
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
	if err := attachProof(tree, proofOptions(tree, did, created), key); err != nil {
		return nil, fmt.Errorf("signing document: %w", err)
	}
	return canon.Encode(tree)
}

// attachProof signs doc (which has no proof) under options and stores the
// finished proof in doc, the way Sign did before signTree.
func attachProof(doc, options map[string]any, key ed25519.PrivateKey) error {
	msg, err := hashData(doc, options)
	if err != nil {
		return err
	}
	proof := maps1(options)
	proof["proofValue"] = "z" + base58Encode(ed25519.Sign(key, msg))
	doc["proof"] = proof
	return nil
}

// issueLabelJSON is IssueLabel over signJSON.
func issueLabelJSON(method string, in LabelInput, key ed25519.PrivateKey) ([]byte, error) {
	if in.IssuerDID == "" {
		in.IssuerDID = DIDKey(key.Public().(ed25519.PublicKey))
	}
	doc, err := BuildLabel(method, in)
	if err != nil {
		return nil, fmt.Errorf("issuing label: %w", err)
	}
	signed, err := signJSON(doc, key, in.IssuedAt)
	if err != nil {
		return nil, fmt.Errorf("issuing label: %w", err)
	}
	return signed, nil
}

// sameNormal checks that normalize and the JSON round trip agree on doc:
// the same tree, or the same error.
func sameNormal(t *testing.T, name string, doc map[string]any) {
	t.Helper()
	got, gerr := normalize(doc)
	want, werr := normalizeJSON(doc)
	switch {
	case (gerr == nil) != (werr == nil):
		t.Errorf("%s: normalize error %v, JSON round trip error %v", name, gerr, werr)
	case gerr != nil && gerr.Error() != werr.Error():
		t.Errorf("%s: normalize error %q, JSON round trip error %q", name, gerr, werr)
	case !reflect.DeepEqual(got, want):
		t.Errorf("%s: normalize gives\n%#v\nJSON round trip gives\n%#v", name, got, want)
	}
}

// Pieces random strings are made of: escapes JCS writes as \x, controls it
// writes as \u00xx, characters encoding/json escapes and canon does not,
// private-use and astral characters (which sort differently as UTF-16),
// and, rarely, bytes that are not UTF-8.
var pieces = []string{
	"a", "Z", "0", " ", "-", ":", "/", "urn:x", "proof", "p", "é", "ß", "中文",
	`"`, `\`, "\b", "\f", "\n", "\r", "\t", "\x00", "\x01", "\x1f", "\x7f",
	"<", ">", "&", "\u2028", "\u2029", "\u00a0", "\ufeff", "\ufffd", "\uffff",
	"\ue000", "\uf8ff", "\U000f0000", "\U0010fffd", "\U0010ffff", "\U0001f600", "\U00010000",
	`\u00e9`, `\ud800`, "safe\u200b",
}

var badUTF8 = []string{"\xff", "\xc3", "\xed\xa0\x80", "\xed\xbf\xbf", "\xf4\x90\x80\x80", "\xc0\xaf"}

func randString(r *rand.Rand, invalid bool) string {
	var b strings.Builder
	for n := r.IntN(12); n > 0; n-- {
		b.WriteString(pieces[r.IntN(len(pieces))])
	}
	if invalid && r.IntN(40) == 0 {
		b.WriteString(badUTF8[r.IntN(len(badUTF8))])
	}
	return b.String()
}

func nonEmpty(r *rand.Rand, invalid bool) string {
	if s := randString(r, invalid); s != "" {
		return s
	}
	return "x"
}

func randSRI(r *rand.Rand) string {
	var b [32]byte
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return "sha256-" + base64.StdEncoding.EncodeToString(b[:])
}

func randTime(r *rand.Rand) time.Time {
	return time.Unix(r.Int64N(4e9), r.Int64N(1e9))
}

func randInput(r *rand.Rand, keys []ed25519.PrivateKey) LabelInput {
	var subject [32]byte
	for i := range subject {
		subject[i] = byte(r.Uint32())
	}
	in := LabelInput{
		ID:         "urn:uuid:" + randString(r, true),
		ObservedAt: randTime(r),
		IssuedAt:   randTime(r),
		Subject:    Ref{ID: "urn:awr:mtl:1:subject:sha256:" + hex.EncodeToString(subject[:]), DigestSRI: randSRI(r)},
		Server:     Server{Name: nonEmpty(r, true), Registry: nonEmpty(r, true)},
		PatternSet: Ref{ID: nonEmpty(r, true), DigestSRI: randSRI(r)},
		RecordSet:  Ref{ID: nonEmpty(r, true), DigestSRI: randSRI(r)},
	}
	switch r.IntN(4) {
	case 0:
		in.IssuerDID = DIDKey(keys[r.IntN(len(keys))].Public().(ed25519.PublicKey))
	case 1:
		in.IssuerDID = DIDKey(keys[0].Public().(ed25519.PublicKey))
	}
	if r.IntN(2) == 0 {
		in.IssuerName = randString(r, true)
	}
	switch r.IntN(20) {
	case 0:
		in.ToolSet.Count = canon.MaxSafeInteger
	case 1:
		in.ToolSet.Count = canon.MaxSafeInteger + 1 // the JSON round trip refuses it
	default:
		in.ToolSet.Count = r.IntN(1 << uint(r.IntN(40)))
	}
	if r.IntN(3) > 0 {
		in.ToolSet.DigestSRI = randSRI(r)
	}
	for n := r.IntN(4) * r.IntN(2); n > 0; n-- {
		in.Reasons = append(in.Reasons, Reason{Code: nonEmpty(r, true), Detail: nonEmpty(r, true)})
	}
	for n := r.IntN(6) * r.IntN(2); n > 0; n-- {
		in.PatternMatches = append(in.PatternMatches, PatternMatch{
			Code: nonEmpty(r, true), Severity: randString(r, true), Tier: nonEmpty(r, false),
			Tool: nonEmpty(r, true), Where: nonEmpty(r, false),
		})
	}
	for n := r.IntN(6) * r.IntN(2); n > 0; n-- {
		in.RecordMatches = append(in.RecordMatches, RecordMatch{
			Code: nonEmpty(r, true), Severity: randString(r, true), Pattern: randString(r, true), Field: nonEmpty(r, false),
		})
	}
	for n := r.IntN(3); n > 0; n-- {
		e := Evidence{}
		for _, f := range []*string{&e.Kind, &e.ID, &e.DigestSRI, &e.Value} {
			if r.IntN(2) == 0 {
				*f = randString(r, true)
			}
		}
		in.Evidence = append(in.Evidence, e)
	}
	if r.IntN(6) > 0 {
		p := &PriorLabel{
			ID: nonEmpty(r, true), DigestSRI: randSRI(r), ObservedAt: randTime(r),
			SubjectDigestSRI: randSRI(r),
		}
		if r.IntN(2) == 0 {
			p.SubjectDigestSRI = in.Subject.DigestSRI
		}
		if r.IntN(4) > 0 {
			p.ToolSetDigest = randSRI(r)
		}
		in.Prior = p
	}
	if r.IntN(3) == 0 {
		in.UnchangedSince = randTime(r)
	}
	return in
}

// TestNormalizeDifferential builds labels of every method from random
// inputs and holds normalize to the JSON round trip, and IssueLabel to the
// bytes the all-JSON signing path gives.
func TestNormalizeDifferential(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	keys := []ed25519.PrivateKey{demoKey()}
	for i := 1; i < 4; i++ {
		seed := sha256.Sum256([]byte{byte(i)})
		keys = append(keys, ed25519.NewKeyFromSeed(seed[:]))
	}
	n := 1500
	if testing.Short() {
		n = 200
	}
	built, signed := 0, 0
	for i := 0; i < n; i++ {
		in := randInput(r, keys)
		key := keys[r.IntN(len(keys))]
		for _, method := range []string{MethodObservation, MethodPatternScan, MethodContinuity, MethodNameThreat} {
			name := fmt.Sprintf("input %d, %s", i, method)
			withIssuer := in
			if withIssuer.IssuerDID == "" {
				withIssuer.IssuerDID = DIDKey(key.Public().(ed25519.PublicKey))
			}
			if doc, err := BuildLabel(method, withIssuer); err == nil {
				built++
				sameNormal(t, name, doc)
			}
			got, gerr := IssueLabel(method, in, key)
			want, werr := issueLabelJSON(method, in, key)
			switch {
			case (gerr == nil) != (werr == nil):
				t.Fatalf("%s: IssueLabel error %v, JSON path error %v", name, gerr, werr)
			case gerr != nil:
				if gerr.Error() != werr.Error() {
					t.Fatalf("%s: IssueLabel error %q, JSON path error %q", name, gerr, werr)
				}
			case !bytes.Equal(got, want):
				t.Fatalf("%s: IssueLabel gives\n%s\nJSON path gives\n%s", name, got, want)
			default:
				signed++
			}
		}
	}
	// The generator must exercise the signing path, not only refusals.
	if built < n || signed < n {
		t.Errorf("only %d documents built and %d signed from %d inputs", built, signed, n)
	}
}

// TestNormalizeFallback covers the Go values treeOf does not convert, or
// converts only when the JSON round trip would leave them unchanged: each
// must give exactly what the round trip gives, tree or error.
func TestNormalizeFallback(t *testing.T) {
	deep := func(n int, leaf any) map[string]any {
		v := leaf
		for i := 1; i < n; i++ {
			v = []any{v}
		}
		return map[string]any{"v": v}
	}
	type point struct{ X, Y int }
	cases := []struct {
		name     string
		doc      map[string]any
		fallback bool // treeOf must decline it
	}{
		{"known types", map[string]any{
			"s": "a<b>&\u2028\x00", "t": true, "f": false, "n": nil, "i": -7, "j": int64(canon.MaxSafeInteger),
			"a": []any{1, "x", nil, []any{}, map[string]any{}}, "ss": []string{"a", "\U0001f600"},
			"ms": []map[string]any{{"k": 1}, nil}, "nilA": []any(nil), "nilM": map[string]any(nil),
			"nilSS": []string(nil), "nilMS": []map[string]any(nil), "\ue000": "", "\U0001f600": "",
		}, false},
		{"empty", map[string]any{}, false},
		{"depth 64", deep(63, []any{}), false},
		{"depth 65", deep(64, []any{}), true},
		{"depth 65 of nil", deep(64, []any(nil)), false},
		{"float integral", map[string]any{"f": 2.0}, true},
		{"float fraction", map[string]any{"f": 1.5}, true},
		{"float huge", map[string]any{"f": 1e300}, true},
		{"int too big", map[string]any{"i": canon.MaxSafeInteger + 1}, true},
		{"int too small", map[string]any{"i": []any{-canon.MaxSafeInteger - 1}}, true},
		{"int64 too big", map[string]any{"i": int64(1) << 62}, true},
		{"int32", map[string]any{"i": int32(5)}, true},
		{"uint64", map[string]any{"i": uint64(5)}, true},
		{"json.Number", map[string]any{"n": json.Number("12")}, true},
		{"json.RawMessage", map[string]any{"r": json.RawMessage(`{"b":1,"a":[true]}`)}, true},
		{"json.RawMessage duplicate", map[string]any{"r": json.RawMessage(`{"a":1,"a":2}`)}, true},
		{"struct", map[string]any{"p": point{1, 2}}, true},
		{"map[string]string", map[string]any{"m": map[string]string{"a": "b"}}, true},
		{"[]int", map[string]any{"a": []int{1, 2}}, true},
		{"[]byte", map[string]any{"b": []byte("hi")}, true},
		{"time.Time", map[string]any{"t": time.Date(2026, 7, 30, 9, 0, 0, 0, time.UTC)}, true},
		{"error value", map[string]any{"e": errors.New("x")}, true},
		{"channel", map[string]any{"c": make(chan int)}, true},
		{"invalid UTF-8 value", map[string]any{"s": "a\xffb"}, true},
		{"invalid UTF-8 in []string", map[string]any{"s": []string{"ok", "\xed\xa0\x80"}}, true},
		{"invalid UTF-8 key", map[string]any{"a\xff": 1}, true},
		{"colliding keys", map[string]any{"a\xff": 1, "a\xfe": 2}, true},
		{"too many bytes", map[string]any{"s": strings.Repeat("<", 1<<20)}, true},
		{"nested unknown", map[string]any{"a": []any{map[string]any{"x": []map[string]any{{"f": 0.5}}}}}, true},
	}
	for _, c := range cases {
		sameNormal(t, c.name, c.doc)
		conv := treeOf{budget: canon.DefaultLimits.MaxBytes}
		if _, ok := conv.object(c.doc, 1); ok == c.fallback {
			t.Errorf("%s: direct conversion ok=%v, want %v", c.name, ok, !c.fallback)
		}
	}
	// A nil document is JSON null: the round trip refuses it.
	if got, err := normalize(nil); err == nil {
		t.Errorf("normalize(nil) = %v, want an error", got)
	}
}

// TestNormalizeCopies checks the tree shares no map or slice with the
// document, so Sign may add its proof without touching the caller's values.
func TestNormalizeCopies(t *testing.T) {
	doc, err := BuildLabel(MethodPatternScan, exampleInput())
	if err != nil {
		t.Fatal(err)
	}
	before, _ := normalizeJSON(doc)
	tree, err := normalize(doc)
	if err != nil {
		t.Fatal(err)
	}
	tree["proof"] = map[string]any{}
	tree["credentialSubject"].(map[string]any)["verdict"] = "x"
	tree["@context"].([]any)[0] = "y"
	after, _ := normalizeJSON(doc)
	if !reflect.DeepEqual(before, after) {
		t.Error("changing normalize's tree changed the document")
	}
}

// TestInsertMember holds encodeOpen and insertMember to canon.Encode: for
// objects with member names on both sides of "proof" in UTF-16 order (and
// none, and only one side), the open encoding is the object's encoding and
// the proof inserted into it is the encoding of the object with the proof.
func TestInsertMember(t *testing.T) {
	names := []string{
		"", "@context", "Proof", "p", "pro", "proo", "prooe", "proof\x00", "proof0", "proofValue",
		"proog", "q", "type", "~", "\u00e9", "\ue000", "\uffff", "\U0001f600", "\U0010ffff",
	}
	r := rand.New(rand.NewPCG(3, 4))
	proof := map[string]any{"type": ProofType, "proofValue": "z3", "@context": []any{"x"}}
	for i := 0; i < 2000; i++ {
		m := map[string]any{}
		for n := r.IntN(len(names) + 1); n > 0; n-- {
			m[names[r.IntN(len(names))]] = randString(r, false)
		}
		switch i {
		case 0:
			m = map[string]any{}
		case 1:
			m = map[string]any{"a": 1}
		case 2:
			m = map[string]any{"z": 1}
		}
		want, err := canon.Encode(m)
		if err != nil {
			t.Fatal(err)
		}
		open, at, err := encodeOpen(m, "proof")
		if err != nil || !bytes.Equal(open, want) {
			t.Fatalf("encodeOpen(%q) = %q, %v; want %q", m, open, err, want)
		}
		got, err := insertMember(open, at, "proof", proof)
		with := maps1(m)
		with["proof"] = proof
		if want, _ = canon.Encode(with); err != nil || !bytes.Equal(got, want) {
			t.Fatalf("insertMember into %q at %d = %q, %v; want %q", open, at, got, err, want)
		}
	}
	if _, _, err := encodeOpen(map[string]any{"a": 1.5}, "proof"); err == nil {
		t.Error("encodeOpen accepted a value canon.Encode refuses")
	}
	if _, err := insertMember([]byte("{}"), 1, "proof", "\xff"); err == nil {
		t.Error("insertMember accepted a value canon.Encode refuses")
	}
}

// TestSignNilDocument: a nil document is refused with an error, not a panic.
func TestSignNilDocument(t *testing.T) {
	key := ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize))
	if _, err := Sign(nil, key, time.Unix(0, 0)); err == nil {
		t.Fatal("signed a nil document")
	}
}
