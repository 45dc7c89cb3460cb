package format_test

import (
	"crypto/ed25519"
	"encoding/base64"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/histor-observer/histor/log/format"
	"github.com/histor-observer/histor/log/keys"
)

// testDID is the did:key of testKey.
const testDID = "did:key:z6MkehRgf7yJbgaGfYsdoAsKdBPE3dj2CYhowQdcjqSJgvVd"

const testOrigin = "histor.test/log"

func testKey() ed25519.PrivateKey {
	seed := make([]byte, 32)
	for i := range seed {
		seed[i] = byte(i)
	}
	return ed25519.NewKeyFromSeed(seed)
}

func testPub() ed25519.PublicKey { return testKey().Public().(ed25519.PublicKey) }

// testTree is a tree of n leaves built with x/mod's tlog, an implementation independent of
// the one under test.
type testTree struct {
	stored []tlog.Hash
	n      int64
}

func newTestTree(t testing.TB, n int) *testTree { return newForkedTree(t, n, 0) }

// newForkedTree is a tree of n leaves that differ, for each salt, from every other salt's.
func newForkedTree(t testing.TB, n int, salt byte) *testTree {
	t.Helper()
	tr := &testTree{}
	for i := 0; i < n; i++ {
		hashes, err := tlog.StoredHashes(int64(i), []byte{byte(i), byte(i >> 8), salt}, tr)
		if err != nil {
			t.Fatal(err)
		}
		tr.stored = append(tr.stored, hashes...)
	}
	tr.n = int64(n)
	return tr
}

func (tr *testTree) ReadHashes(indexes []int64) ([]tlog.Hash, error) {
	out := make([]tlog.Hash, len(indexes))
	for i, x := range indexes {
		out[i] = tr.stored[x]
	}
	return out, nil
}

func (tr *testTree) root(t testing.TB, size int64) [32]byte {
	t.Helper()
	h, err := tlog.TreeHash(size, tr)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func hashes(p []tlog.Hash) [][32]byte {
	out := make([][32]byte, len(p))
	for i := range p {
		out[i] = p[i]
	}
	return out
}

// testHead returns a head of a two-leaf tree in both signed forms.
func testHead(t testing.TB) (sth, checkpoint []byte) {
	t.Helper()
	root := newTestTree(t, 2).root(t, 2)
	when := time.Date(2026, 9, 23, 9, 13, 4, 0, time.UTC)
	sth, err := format.SignSTH(testKey(), testDID, 2, root, when)
	if err != nil {
		t.Fatal(err)
	}
	cp, err := format.SignCheckpoint(testSigner(t), format.Checkpoint{Origin: testOrigin, Size: 2, Root: root})
	if err != nil {
		t.Fatal(err)
	}
	return sth, cp
}

func testSigner(t testing.TB) note.Signer {
	t.Helper()
	s, err := keys.NoteSigner(testOrigin, testKey())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func testVerifier(t testing.TB) note.Verifier {
	t.Helper()
	v, err := format.NewVerifier(testOrigin, testPub())
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func mustBase64(t testing.TB, s string) []byte {
	t.Helper()
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func encode(b []byte) string { return base64.StdEncoding.EncodeToString(b) }
