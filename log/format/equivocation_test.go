package format_test

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"testing"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/histor-observer/histor/log/format"
	"github.com/histor-observer/histor/log/keys"
)

// signedAt signs tree tr's head at size n as a checkpoint of testOrigin.
func signedAt(t testing.TB, tr *testTree, n int64) []byte {
	t.Helper()
	msg, err := format.SignCheckpoint(testSigner(t), format.Checkpoint{Origin: testOrigin, Size: uint64(n), Root: tr.root(t, n)})
	if err != nil {
		t.Fatal(err)
	}
	return msg
}

func proveTree(t testing.TB, tr *testTree, m, n int64) [][32]byte {
	t.Helper()
	p, err := tlog.ProveTree(n, m, tr)
	if err != nil {
		t.Fatal(err)
	}
	return hashes(p)
}

// sameSizeBundle is a fork at size 5: two trees that differ in every leaf.
func sameSizeBundle(t testing.TB) (a, b []byte, e *format.Equivocation) {
	t.Helper()
	a, b = signedAt(t, newForkedTree(t, 5, 1), 5), signedAt(t, newForkedTree(t, 5, 2), 5)
	e, err := format.NewEquivocation(a, b, nil, testVerifier(t))
	if err != nil {
		t.Fatal(err)
	}
	return a, b, e
}

func TestEquivocationSameSize(t *testing.T) {
	a, b, e := sameSizeBundle(t)
	again, err := format.NewEquivocation(b, a, nil, testVerifier(t))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(e.Marshal(), again.Marshal()) || e.ID() != again.ID() {
		t.Fatal("the order of the arguments changes the bundle")
	}
	if e.Kind() != format.EquivocationSameSize || e.Origin != testOrigin || e.A.Size != 5 || e.B.Size != 5 {
		t.Fatalf("bundle %+v of kind %v", e, e.Kind())
	}
	if bytes.Compare(e.A.Root[:], e.B.Root[:]) >= 0 {
		t.Fatal("equal sizes not ordered by root")
	}
	got, err := format.VerifyEquivocation(e.Marshal(), testVerifier(t))
	if err != nil {
		t.Fatal(err)
	}
	if got.ID() != e.ID() || !bytes.Equal(got.Marshal(), e.Marshal()) {
		t.Fatal("verified bundle differs from the one made")
	}
	if !bytes.Equal(got.A.Raw, a) && !bytes.Equal(got.A.Raw, b) {
		t.Fatal("notes not kept as given")
	}
}

func TestEquivocationFailedProof(t *testing.T) {
	honest, forked := newForkedTree(t, 9, 1), newForkedTree(t, 9, 2)
	small, large := signedAt(t, honest, 5), signedAt(t, forked, 9)
	proof := proveTree(t, forked, 5, 9) // the forked tree's own proof: it starts from another root
	e, err := format.NewEquivocation(large, small, proof, testVerifier(t))
	if err != nil {
		t.Fatal(err)
	}
	if e.Kind() != format.EquivocationFailedProof || e.A.Size != 5 || e.B.Size != 9 || len(e.Proof) != len(proof) {
		t.Fatalf("bundle %+v of kind %v", e, e.Kind())
	}
	if _, err := format.VerifyEquivocation(e.Marshal(), testVerifier(t)); err != nil {
		t.Fatal(err)
	}
	// The ID names the pair, not the proof tried.
	other := append([][32]byte(nil), proof...)
	other[0][0] ^= 1
	e2, err := format.NewEquivocation(small, large, other, testVerifier(t))
	if err != nil {
		t.Fatal(err)
	}
	if e2.ID() != e.ID() || bytes.Equal(e2.Marshal(), e.Marshal()) {
		t.Fatal("another proof for the same pair changed the ID or not the bytes")
	}
}

func TestNotAnEquivocation(t *testing.T) {
	tr := newTestTree(t, 9)
	at5, at9 := signedAt(t, tr, 5), signedAt(t, tr, 9)
	forked9 := signedAt(t, newForkedTree(t, 9, 7), 9)
	good := proveTree(t, tr, 5, 9)
	otherSigner, err := keys.NoteSigner(testOrigin, witnessKey())
	if err != nil {
		t.Fatal(err)
	}
	foreign, err := format.SignCheckpoint(otherSigner, format.Checkpoint{Origin: testOrigin, Size: 9, Root: tr.root(t, 9)})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		a, b  []byte
		proof [][32]byte
		want  error
	}{
		{"consistent, proof verifies", at5, at9, good, format.ErrNoEquivocation},
		{"proof too short", at5, forked9, good[1:], format.ErrNoEquivocation},
		{"no proof between different sizes", at5, forked9, nil, format.ErrNoEquivocation},
		{"one checkpoint twice", at9, at9, nil, format.ErrNoEquivocation},
		{"proof at equal sizes", at9, forked9, good, format.ErrNoEquivocation},
		{"not signed by the log", at9, foreign, nil, nil},
	} {
		_, err := format.NewEquivocation(c.a, c.b, c.proof, testVerifier(t))
		if err == nil || (c.want != nil && !errors.Is(err, c.want)) {
			t.Errorf("%s: err = %v, want %v", c.name, err, c.want)
		}
	}
}

func TestVerifyEquivocationNeedsTheLogsKey(t *testing.T) {
	_, _, e := sameSizeBundle(t)
	other, err := format.NewVerifier(testOrigin, witnessKey().Public().(ed25519.PublicKey))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := format.VerifyEquivocation(e.Marshal(), other); err == nil {
		t.Fatal("verified under another key")
	}
	if _, err := format.ParseEquivocation(e.Marshal()); err != nil {
		t.Fatalf("shape check: %v", err)
	}
}

// TestEquivocationMangled flips each byte of a bundle in turn: every result is refused. (A
// same-size bundle: in a failed-proof one, a changed proof hash is still a failing proof.)
func TestEquivocationMangled(t *testing.T) {
	_, _, e := sameSizeBundle(t)
	data := e.Marshal()
	v := testVerifier(t)
	for i := range data {
		for _, x := range []byte{0x01, 0x20, 0x80} {
			m := bytes.Clone(data)
			m[i] ^= x
			if _, err := format.VerifyEquivocation(m, v); err == nil {
				t.Fatalf("byte %d ^ %#x accepted", i, x)
			}
		}
	}
	for _, m := range [][]byte{data[:len(data)-1], append(bytes.Clone(data), '\n'), data[1:]} {
		if _, err := format.VerifyEquivocation(m, v); err == nil {
			t.Fatalf("accepted %q", m)
		}
	}
}

func TestParseEquivocationRefusesSwappedNotes(t *testing.T) {
	_, _, e := sameSizeBundle(t)
	swapped := &format.Equivocation{Origin: e.Origin, A: e.B, B: e.A}
	if _, err := format.ParseEquivocation(swapped.Marshal()); err == nil {
		t.Fatal("accepted notes out of order")
	}
}

func FuzzParseEquivocation(f *testing.F) {
	_, _, e := sameSizeBundle(f)
	f.Add(e.Marshal())
	honest, forked := newForkedTree(f, 9, 1), newForkedTree(f, 9, 2)
	fp, err := format.NewEquivocation(signedAt(f, honest, 5), signedAt(f, forked, 9), proveTree(f, forked, 5, 9), testVerifier(f))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(fp.Marshal())
	f.Add([]byte(format.EquivocationType + "\n1\n1\n\nab"))
	f.Fuzz(func(t *testing.T, data []byte) {
		e, err := format.ParseEquivocation(data)
		if err != nil {
			return
		}
		if !bytes.Equal(e.Marshal(), data) {
			t.Fatalf("accepted %q, which re-encodes as %q", data, e.Marshal())
		}
	})
}
