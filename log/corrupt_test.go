package log

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble"
)

// buildFlushed makes a log of 600 entries with everything flushed to
// sstables, so there are tables, full and partial tiles to damage.
func buildFlushed(t *testing.T) (string, Config) {
	dir := t.TempDir()
	cfg := testConfig(dir)
	l := openTest(t, cfg)
	appendN(t, l, 0, 300)
	if err := l.store.(*pebbleStore).db.Flush(); err != nil {
		t.Fatal(err)
	}
	appendN(t, l, 300, 300)
	if err := l.store.(*pebbleStore).db.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return dir, cfg
}

func glob(t *testing.T, dir, pattern string) string {
	m, _ := filepath.Glob(filepath.Join(dir, pattern))
	if len(m) == 0 {
		t.Fatalf("no %s in %s", pattern, dir)
	}
	return m[len(m)-1]
}

// rawLatest reads the latest head record without the log's checks.
func rawLatest(t *testing.T, dir string) []byte {
	db, err := pebble.Open(dir, &pebble.Options{ErrorIfNotExists: true, ReadOnly: true})
	if err != nil {
		return nil // the store is too broken to read; nothing was signed in it
	}
	defer db.Close()
	v, _ := pebbleGet(db, keyLatest)
	return v
}

// rawEdit changes the store through Pebble itself, the way a bug or a
// careless operator would.
func rawEdit(t *testing.T, dir string, edit func(db *pebble.DB) error) {
	db, err := pebble.Open(dir, &pebble.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := edit(db); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestOpenRefusesDamagedStore(t *testing.T) {
	cases := []struct {
		name   string
		damage func(t *testing.T, dir string)
		what   string // must appear in the error
	}{
		{"truncated sstable", func(t *testing.T, dir string) {
			os.Truncate(glob(t, dir, "*.sst"), 100)
		}, ".sst"},
		{"deleted sstable", func(t *testing.T, dir string) {
			os.Remove(glob(t, dir, "*.sst"))
		}, "pebble store"},
		{"deleted MANIFEST", func(t *testing.T, dir string) {
			os.Remove(glob(t, dir, "MANIFEST-*"))
		}, "MANIFEST"},
		{"truncated MANIFEST", func(t *testing.T, dir string) {
			os.Truncate(glob(t, dir, "MANIFEST-*"), 10)
		}, "pebble store"},
		{"deleted OPTIONS", func(t *testing.T, dir string) {
			m, _ := filepath.Glob(filepath.Join(dir, "OPTIONS-*"))
			for _, f := range m {
				os.Remove(f)
			}
		}, "OPTIONS"},
		{"truncated OPTIONS", func(t *testing.T, dir string) {
			m, _ := filepath.Glob(filepath.Join(dir, "OPTIONS-*"))
			for _, f := range m {
				os.Truncate(f, 0)
			}
		}, "OPTIONS"},
		{"deleted CURRENT", func(t *testing.T, dir string) {
			os.Remove(filepath.Join(dir, "CURRENT"))
		}, "CURRENT"},
		{"overwritten full tile", func(t *testing.T, dir string) {
			rawEdit(t, dir, func(db *pebble.DB) error {
				v, _ := pebbleGet(db, tileKey(0, 0))
				v[5] ^= 1
				return db.Set(tileKey(0, 0), v, pebble.Sync)
			})
		}, "tile 0/0"},
		{"deleted full tile", func(t *testing.T, dir string) {
			rawEdit(t, dir, func(db *pebble.DB) error { return db.Delete(tileKey(0, 0), pebble.Sync) })
		}, "tile 0/0: missing"},
		{"deleted last full tile", func(t *testing.T, dir string) {
			rawEdit(t, dir, func(db *pebble.DB) error { return db.Delete(tileKey(0, 1), pebble.Sync) })
		}, "tile 0/1: missing"},
		{"overwritten edge tile", func(t *testing.T, dir string) {
			rawEdit(t, dir, func(db *pebble.DB) error {
				return db.Set(tileKey(0, 2), encodeTile(make([]byte, 88*hashSize)), pebble.Sync)
			})
		}, "root"},
		{"deleted last entry bundle", func(t *testing.T, dir string) {
			rawEdit(t, dir, func(db *pebble.DB) error { return db.Delete(bundleKey(2), pebble.Sync) })
		}, "entry bundle 2"},
		{"short last entry bundle", func(t *testing.T, dir string) {
			rawEdit(t, dir, func(db *pebble.DB) error {
				v, _ := pebbleGet(db, bundleKey(2))
				offs, _ := bundleSplit(v)
				return db.Set(bundleKey(2), v[:offs[len(offs)-1]], pebble.Sync)
			})
		}, "entry bundle 2"},
		{"changed last entry", func(t *testing.T, dir string) {
			rawEdit(t, dir, func(db *pebble.DB) error {
				v, _ := pebbleGet(db, bundleKey(2))
				v[len(v)-2] ^= 1
				return db.Set(bundleKey(2), v, pebble.Sync)
			})
		}, "entry 599"},
		{"entry bundle beyond the head", func(t *testing.T, dir string) {
			rawEdit(t, dir, func(db *pebble.DB) error {
				return db.Set(bundleKey(3), appendBundleEntry(nil, []byte(`{}`)), pebble.Sync)
			})
		}, "entry bundle 3"},
		{"deleted latest head", func(t *testing.T, dir string) {
			rawEdit(t, dir, func(db *pebble.DB) error { return db.Delete(keyLatest, pebble.Sync) })
		}, "latest head"},
		{"older head made latest", func(t *testing.T, dir string) {
			rawEdit(t, dir, func(db *pebble.DB) error {
				it, _ := db.NewIter(&pebble.IterOptions{LowerBound: []byte{prefixHead}, UpperBound: []byte{prefixHead + 1}})
				it.First()
				v := bytes.Clone(it.Value())
				it.Close()
				return db.Set(keyLatest, v, pebble.Sync)
			})
		}, "head history"},
		{"forged STH", func(t *testing.T, dir string) {
			rawEdit(t, dir, func(db *pebble.DB) error {
				v, _ := pebbleGet(db, keyLatest)
				i := bytes.Index(v, []byte(`"treeSize":600`))
				copy(v[i:], `"treeSize":601`)
				return db.Set(keyLatest, v, pebble.Sync)
			})
		}, "latest head"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir, cfg := buildFlushed(t)
			c.damage(t, dir)
			before := rawLatest(t, dir)
			l, err := Open(context.Background(), cfg)
			if err == nil {
				l.Close()
				t.Fatal("opened a damaged store")
			}
			var ce *CorruptError
			if !errors.As(err, &ce) || !strings.Contains(err.Error(), c.what) {
				t.Fatalf("error %q, want a *CorruptError naming %q", err, c.what)
			}
			if after := rawLatest(t, dir); !bytes.Equal(before, after) {
				t.Fatal("a head was signed over the damaged store")
			}
		})
	}
}

func TestFsckFindsDamage(t *testing.T) {
	dir, _ := buildFlushed(t)
	rawEdit(t, dir, func(db *pebble.DB) error {
		v, _ := pebbleGet(db, tileKey(0, 1))
		v[40] ^= 1
		if err := db.Set(tileKey(0, 1), v, nil); err != nil {
			return err
		}
		// Entry 10 rewritten with the same length and id.
		v, _ = pebbleGet(db, bundleKey(0))
		i := bytes.Index(v, []byte(`"i":10}`))
		copy(v[i:], `"i":11}`)
		return db.Set(bundleKey(0), v, pebble.Sync)
	})
	rep, err := Fsck(context.Background(), dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	joined := strings.Join(rep.Problems, "\n")
	for _, want := range []string{"tile 0/1", "tile 0/0", "root"} {
		if !strings.Contains(joined, want) {
			t.Errorf("fsck did not report %q; it said:\n%s", want, joined)
		}
	}
}

// TestFsckFindsFarStrayTile: a tile key far beyond the tree (where n·256
// would overflow) is still reported.
func TestFsckFindsFarStrayTile(t *testing.T) {
	dir, _ := buildFlushed(t)
	rawEdit(t, dir, func(db *pebble.DB) error {
		return db.Set(tileKey(0, 1<<60), encodeTile(make([]byte, fullTile)), pebble.Sync)
	})
	rep, err := Fsck(context.Background(), dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(rep.Problems, "\n"), "tile 0/1152921504606846976 lies beyond") {
		t.Fatalf("fsck did not report the stray tile; it said %q", rep.Problems)
	}
}
