package log

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/note"

	"github.com/histor-observer/histor/log/keys"
)

// testDID is the did:key of the Ed25519 key from seed bytes 0..31, the
// MTL/1 vectors' demonstration key.
const testDID = "did:key:z6MkehRgf7yJbgaGfYsdoAsKdBPE3dj2CYhowQdcjqSJgvVd"

const testOrigin = "histor.test/log"

func testKey() ed25519.PrivateKey {
	seed := make([]byte, 32)
	for i := range seed {
		seed[i] = byte(i)
	}
	return ed25519.NewKeyFromSeed(seed)
}

func testConfig(dir string) Config {
	return Config{Dir: dir, Origin: testOrigin, Key: testKey(), DID: testDID, CacheBytes: 8 << 20}
}

func openTest(t testing.TB, cfg Config) *Log {
	t.Helper()
	l, err := Open(context.Background(), cfg)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// testEntry is a small label with an id member, like a real one.
func testEntry(i int) Entry {
	id := fmt.Sprintf("urn:uuid:test-%08d", i)
	return Entry{ID: id, Label: fmt.Appendf(nil, `{"id":%q,"i":%d}`, id, i)}
}

func appendN(t testing.TB, l *Log, from, n int) uint64 {
	t.Helper()
	entries := make([]Entry, n)
	for i := range entries {
		entries[i] = testEntry(from + i)
	}
	first, err := l.Append(context.Background(), entries, nil)
	if err != nil {
		t.Fatalf("Append: %v", err)
	}
	return first
}

// naiveRoot is RFC 9162 §2.1.1 written straight from the text.
func naiveRoot(leaves [][32]byte) [32]byte {
	switch len(leaves) {
	case 0:
		return sha256.Sum256(nil)
	case 1:
		return leaves[0]
	}
	k := 1
	for k*2 < len(leaves) {
		k *= 2
	}
	l, r := naiveRoot(leaves[:k]), naiveRoot(leaves[k:])
	return sha256.Sum256(append(append([]byte{1}, l[:]...), r[:]...))
}

func naiveLeaf(b []byte) [32]byte { return sha256.Sum256(append([]byte{0}, b...)) }

// stepClock is a clock the test moves by hand.
type stepClock struct{ t time.Time }

func (c *stepClock) now() time.Time { return c.t }

type ed25519PublicKey = ed25519.PublicKey

func ed25519NewKeyFromSeed(seed []byte) ed25519.PrivateKey { return ed25519.NewKeyFromSeed(seed) }

func errorsAs(err error, target any) bool { return errors.As(err, target) }

func testingGOMAXPROCS() int { return runtime.GOMAXPROCS(0) }

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

func (l *Log) latestSeq() uint64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.latest.Seq
}

func mustNoteSigner(t testing.TB, origin string, key ed25519.PrivateKey) note.Signer {
	t.Helper()
	s, err := keys.NoteSigner(origin, key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
