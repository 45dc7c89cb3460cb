package events

import (
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"testing"
	"time"

	"github.com/histor-observer/histor/log/awr"
)

func newSigner(t *testing.T) (Signer, ed25519.PublicKey) {
	t.Helper()
	pub, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return Signer{Key: key, DID: awr.DIDKey(pub)}, pub
}

func sign(t *testing.T, s Signer, target, kind string, n int) ([]byte, string) {
	t.Helper()
	doc, id, err := s.Sign(Fact{Target: target, Kind: kind, ObservedAt: time.Unix(int64(1e9+n), 0),
		Evidence: map[string]any{"n": n}})
	if err != nil {
		t.Fatal(err)
	}
	return doc, id
}

func TestAppendPageReopen(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	sg, pub := newSigner(t)
	targets := []string{"aaaaaaaaaaaaaaaa", "bbbbbbbbbbbbbbbb", "aaaaaaaaaaaaaaaa", "cccccccccccccccc", "aaaaaaaaaaaaaaaa"}
	for i, tg := range targets {
		doc, id := sign(t, sg, tg, KindDefinitions, i)
		c, fresh, err := s.Append(doc, id, tg)
		if err != nil || !fresh || c != uint64(i+1) {
			t.Fatalf("append %d: cursor %d fresh %v err %v", i, c, fresh, err)
		}
		if c2, fresh, err := s.Append(doc, id, tg); err != nil || fresh || c2 != c {
			t.Fatalf("append %d again: cursor %d fresh %v err %v", i, c2, fresh, err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if s, err = Open(dir, nil); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Last() != 5 {
		t.Fatalf("last after reopen = %d, want 5", s.Last())
	}
	cases := []struct {
		after uint64
		limit int
		watch []string
		want  []uint64
	}{
		{0, 100, nil, []uint64{1, 2, 3, 4, 5}},
		{2, 2, nil, []uint64{3, 4}},
		{5, 10, nil, []uint64{}},
		{0, 2, []string{"aaaaaaaaaaaaaaaa"}, []uint64{1, 3}},
		{1, 10, []string{"aaaaaaaaaaaaaaaa", "cccccccccccccccc"}, []uint64{3, 4, 5}},
		{0, 10, []string{"dddddddddddddddd"}, []uint64{}},
	}
	for _, c := range cases {
		items, err := s.Page(c.after, c.limit, c.watch)
		if err != nil {
			t.Fatal(err)
		}
		got := []uint64{}
		for _, it := range items {
			got = append(got, it.Cursor)
			if _, err := Verify(it.Event, pub); err != nil {
				t.Fatalf("event %d: %v", it.Cursor, err)
			}
		}
		if !equal(got, c.want) {
			t.Errorf("Page(%d, %d, %v) = %v, want %v", c.after, c.limit, c.watch, got, c.want)
		}
	}
	newest, err := s.Newest(2, []string{"aaaaaaaaaaaaaaaa"})
	if err != nil || len(newest) != 2 || newest[0].Cursor != 5 || newest[1].Cursor != 3 {
		t.Fatalf("Newest = %+v, %v", newest, err)
	}
}

func equal(a, b []uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestVerifyRefusesMangled changes every byte of a signed event in turn;
// each change must be refused (or leave the parsed document unchanged).
func TestVerifyRefusesMangled(t *testing.T) {
	sg, pub := newSigner(t)
	doc, _ := sign(t, sg, "aaaaaaaaaaaaaaaa", KindSplitView, 1)
	if _, err := Verify(doc, pub); err != nil {
		t.Fatal(err)
	}
	for i := range doc {
		m := append([]byte(nil), doc...)
		m[i] ^= 0x01
		if _, err := Verify(m, pub); err == nil {
			t.Fatalf("byte %d mangled (%q) still verifies", i, m)
		} else if !errors.Is(err, ErrInvalid) {
			t.Fatalf("byte %d: error %v is not ErrInvalid", i, err)
		}
	}
	other, _ := newSigner(t)
	if _, err := Verify(doc, other.Key.Public().(ed25519.PublicKey)); err == nil {
		t.Fatal("verifies under another key")
	}
}

func TestMeta(t *testing.T) {
	s, err := Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var v int
	if err := s.Meta("x/a", &v); !errors.Is(err, ErrNotFound) {
		t.Fatalf("missing meta: %v", err)
	}
	for i, name := range []string{"x/a", "x/b", "y/c"} {
		if err := s.SetMeta(name, i+1); err != nil {
			t.Fatal(err)
		}
	}
	var names []string
	if err := s.EachMeta("x/", func(n string, _ []byte) error { names = append(names, n); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(names) != 2 || names[0] != "x/a" || names[1] != "x/b" {
		t.Fatalf("EachMeta x/ = %v", names)
	}
	if err := s.DeleteMeta("x/a"); err != nil {
		t.Fatal(err)
	}
	if err := s.Meta("x/a", &v); !errors.Is(err, ErrNotFound) {
		t.Fatalf("deleted meta: %v", err)
	}
}
