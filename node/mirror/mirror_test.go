package mirror_test

import (
	"context"
	"crypto/ed25519"
	"errors"
	"testing"

	"filippo.io/torchwood"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/histor-observer/histor/log/format"
	"github.com/histor-observer/histor/node/mirror"
)

func index(t *testing.T, s *mirror.Store, did string) map[string]mirror.Observation {
	t.Helper()
	out := map[string]mirror.Observation{}
	if err := s.EachObservation(did, func(o mirror.Observation) { out[o.Server] = o }); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestSyncReadsObservationsInLogOrder(t *testing.T) {
	o := newObserver(t, "alpha")
	a, _ := o.observe("com.example/a", "https://a.example/mcp", "first", 300)
	b, bDigest := o.observe("com.example/b", "https://b.example/mcp", "b", 2)
	_, aOld := o.observe("com.example/a", "https://a.example/mcp", "first", 0) // same set again: still a's word
	a2, aNew := o.observe("com.example/a", "https://a.example/mcp", "second", 5)
	if a2 != a || aOld == aNew {
		t.Fatal("fixture: the same server should change digest")
	}
	var told []mirror.Observation
	s := openStore(t, t.TempDir(), mirror.Config{OnObservation: func(ob mirror.Observation) { told = append(told, ob) }})
	if err := s.Follow(o.did, ""); err != nil {
		t.Fatal(err)
	}
	res, err := s.Sync(context.Background(), o.did, &logSource{"alpha", o.log})
	if err != nil {
		t.Fatal(err)
	}
	size := o.log.Latest().Size
	if res.Entries != size || s.Size(o.did) != size {
		t.Fatalf("mirrored %d entries (store %d), want %d", res.Entries, s.Size(o.did), size)
	}
	idx := index(t, s, o.did)
	if len(idx) != 2 || idx[a].Digest != aNew || idx[b].Digest != bDigest {
		t.Fatalf("index %+v; want a at %s and b at %s", idx, aNew, bDigest)
	}
	if idx[a].Endpoint != "https://a.example/mcp" || idx[a].LeafIndex <= idx[b].LeafIndex {
		t.Errorf("a's observation %+v: want its endpoint and the latest leaf", idx[a])
	}
	if len(told) != 4 || told[3].Digest != aNew {
		t.Errorf("told %d observations, last %+v; want 4 in log order", len(told), told[len(told)-1])
	}
	if cp := s.Checkpoint(o.did); string(cp) != string(o.log.Latest().Checkpoint) {
		t.Errorf("served checkpoint %q, want the observer's", cp)
	}
	// Nothing new: a second sync adds nothing.
	if res, err := s.Sync(context.Background(), o.did, &logSource{"alpha", o.log}); err != nil || res.Entries != 0 {
		t.Errorf("second sync: %+v, %v; want nothing added", res, err)
	}
}

// A node's mirror serves the observer's log again, as C2SP tiles a standard client reads,
// and another node mirrors the observer from it alone.
func TestMirrorServesTheLogAgain(t *testing.T) {
	o := newObserver(t, "beta")
	for i := range 5 {
		o.observe("com.example/s", "https://s.example/mcp", string(rune('a'+i)), 150)
	}
	first := openStore(t, t.TempDir(), mirror.Config{})
	first.Follow(o.did, o.origin)
	if _, err := first.Sync(context.Background(), o.did, &logSource{"beta", o.log}); err != nil {
		t.Fatal(err)
	}
	size := o.log.Latest().Size
	for _, tl := range tlog.NewTiles(torchwood.TileHeight, 0, int64(size)) {
		path := torchwood.TilePath(tl)
		got, err := first.Tile(o.did, path)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		want, _ := (&logSource{"beta", o.log}).Get(context.Background(), path, 1<<20)
		if string(got) != string(want) {
			t.Fatalf("%s: the mirror serves other bytes than the log", path)
		}
	}
	for n := uint64(0); n*256 < size; n++ {
		w := int(min(256, size-n*256))
		path := torchwood.TilePath(tlog.Tile{H: 8, L: -1, N: int64(n), W: w})
		got, err := first.Tile(o.did, path)
		want, _ := (&logSource{"beta", o.log}).Get(context.Background(), path, 1<<30)
		if err != nil || string(got) != string(want) {
			t.Fatalf("%s: %v, or other bytes than the log's", path, err)
		}
	}
	if _, err := first.Tile(o.did, "tile/0/999"); !errors.Is(err, mirror.ErrNotFound) {
		t.Errorf("a tile beyond the tree: %v, want ErrNotFound", err)
	}
	second := openStore(t, t.TempDir(), mirror.Config{})
	second.Follow(o.did, "")
	if _, err := second.Sync(context.Background(), o.did, &storeSource{first, o.did}); err != nil {
		t.Fatal(err)
	}
	if second.Size(o.did) != size || len(index(t, second, o.did)) != 1 {
		t.Fatalf("second mirror holds %d entries, want %d, and the observation", second.Size(o.did), size)
	}
	p, err := second.Prove(o.did, 0)
	if err != nil {
		t.Fatal(err)
	}
	cp, err := format.ParseCheckpoint(p.Checkpoint, mustVerifier(t, o))
	if err != nil {
		t.Fatal(err)
	}
	if err := format.VerifyInclusion(0, cp.Size, format.LeafHash(p.Entry), p.Hashes, cp.Root); err != nil {
		t.Errorf("the mirror's proof does not verify: %v", err)
	}
}

func mustVerifier(t *testing.T, o *observer) note.Verifier {
	v, err := format.NewVerifier(o.origin, o.key.Public().(ed25519.PublicKey))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// A mirror that holds a partial last bundle fetches that bundle again, whole, once the log
// has grown past it, and keeps only the entries it lacked.
func TestGrowsPastAPartialBundle(t *testing.T) {
	o := newObserver(t, "zeta")
	o.observe("com.example/a", "https://a.example/mcp", "a", 100) // 102 entries: a partial bundle
	s := openStore(t, t.TempDir(), mirror.Config{})
	s.Follow(o.did, "")
	src := &logSource{"zeta", o.log}
	if _, err := s.Sync(context.Background(), o.did, src); err != nil {
		t.Fatal(err)
	}
	first := s.Size(o.did)
	id, digest := o.observe("com.example/a", "https://a.example/mcp", "b", 400)
	res, err := s.Sync(context.Background(), o.did, src)
	if err != nil {
		t.Fatal(err)
	}
	size := o.log.Latest().Size
	if first%256 == 0 || res.Entries != size-first || s.Size(o.did) != size {
		t.Fatalf("from %d to %d: added %d, holds %d", first, size, res.Entries, s.Size(o.did))
	}
	if got := index(t, s, o.did)[id]; got.Digest != digest {
		t.Errorf("after growing: %+v, want digest %s", got, digest)
	}
	for _, tl := range tlog.NewTiles(torchwood.TileHeight, 0, int64(size)) {
		if got, err := s.Tile(o.did, torchwood.TilePath(tl)); err != nil || len(got) != tl.W*32 {
			t.Errorf("%s after growing: %d bytes, %v", torchwood.TilePath(tl), len(got), err)
		}
	}
}
