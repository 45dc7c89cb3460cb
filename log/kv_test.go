package log

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/vfs"
)

// storeImpl makes a fresh store and reopens it, keeping what a restart
// keeps (for the memory store: what was durable).
type storeImpl struct {
	name   string
	open   func(t *testing.T) kvStore
	reopen func(t *testing.T, s kvStore) kvStore
}

var storeImpls = []storeImpl{
	{
		name: "pebble",
		open: func(t *testing.T) kvStore {
			dir := t.TempDir()
			s, err := openPebble(dir, storeOptions{fs: vfs.Default, cacheBytes: 1 << 20}, discardLogger(), false)
			if err != nil {
				t.Fatal(err)
			}
			dirs[s] = dir
			return s
		},
		reopen: func(t *testing.T, s kvStore) kvStore {
			dir := dirs[s.(*pebbleStore)]
			if err := s.close(); err != nil {
				t.Fatal(err)
			}
			r, err := openPebble(dir, storeOptions{fs: vfs.Default, cacheBytes: 1 << 20}, discardLogger(), false)
			if err != nil {
				t.Fatal(err)
			}
			dirs[r] = dir
			return r
		},
	},
	{
		name: "memory",
		open: func(*testing.T) kvStore { return newMemStore() },
		reopen: func(t *testing.T, s kvStore) kvStore {
			c := s.(*memStore).crash()
			if err := s.close(); err != nil {
				t.Fatal(err)
			}
			return c
		},
	},
}

// dirs remembers each Pebble store's directory for reopen.
var dirs = map[*pebbleStore]string{}

func put(t *testing.T, s kvStore, kv ...string) {
	t.Helper()
	b := s.newBatch(0)
	for i := 0; i < len(kv); i += 2 {
		b.set([]byte(kv[i]), []byte(kv[i+1]))
	}
	if err := commit(s, b); err != nil {
		t.Fatalf("commit: %v", err)
	}
}

// walk lists "key=value" over a range.
func walk(t *testing.T, s kvStore, lower, upper string, reverse bool) string {
	t.Helper()
	var lo, up []byte
	if lower != "" {
		lo = []byte(lower)
	}
	if upper != "" {
		up = []byte(upper)
	}
	it, err := s.iter(lo, up, reverse)
	if err != nil {
		t.Fatalf("iter: %v", err)
	}
	var out []string
	for it.next() {
		out = append(out, string(it.key())+"="+string(it.value()))
	}
	if err := it.close(); err != nil {
		t.Fatalf("iter close: %v", err)
	}
	return strings.Join(out, " ")
}

func mustGet(t *testing.T, s kvStore, key string) string {
	t.Helper()
	v, err := s.get([]byte(key))
	if err != nil {
		t.Fatalf("get %q: %v", key, err)
	}
	return string(v)
}

// storeConformance is what the log relies on from every kvStore.
var storeConformance = []struct {
	name string
	run  func(t *testing.T, impl storeImpl, s kvStore) kvStore // returns the store to close
}{
	{"get of a missing key is ErrNotFound", func(t *testing.T, _ storeImpl, s kvStore) kvStore {
		if _, err := s.get([]byte("nope")); !errors.Is(err, ErrNotFound) {
			t.Fatalf("empty store: %v", err)
		}
		put(t, s, "a", "1")
		if _, err := s.get([]byte("a\x00")); !errors.Is(err, ErrNotFound) {
			t.Fatalf("beside a key: %v", err)
		}
		return s
	}},
	{"a batch is seen whole or not at all", func(t *testing.T, _ storeImpl, s kvStore) kvStore {
		put(t, s, "a", "old")
		before, err := s.iter(nil, nil, false)
		if err != nil {
			t.Fatal(err)
		}
		b := s.newBatch(64)
		b.set([]byte("a"), []byte("new"))
		b.set([]byte("b"), []byte("1"))
		b.set([]byte("b"), []byte("2")) // the later set wins
		if _, err := s.get([]byte("b")); !errors.Is(err, ErrNotFound) {
			t.Fatalf("a batch not yet applied is visible: %v", err)
		}
		wait, err := s.apply(b)
		if err != nil {
			t.Fatal(err)
		}
		if got := mustGet(t, s, "a") + mustGet(t, s, "b"); got != "new2" {
			t.Fatalf("after apply, before wait: %q", got)
		}
		var seen []string
		for before.next() {
			seen = append(seen, string(before.key())+"="+string(before.value()))
		}
		if err := before.close(); err != nil || strings.Join(seen, " ") != "a=old" {
			t.Fatalf("an iterator made before the batch saw %q (%v)", seen, err)
		}
		if err := wait(); err != nil {
			t.Fatal(err)
		}
		return s
	}},
	{"values are copies", func(t *testing.T, _ storeImpl, s kvStore) kvStore {
		k, v := []byte("k"), []byte("value")
		b := s.newBatch(0)
		b.set(k, v)
		k[0], v[0] = 'x', 'X'
		if err := commit(s, b); err != nil {
			t.Fatal(err)
		}
		got, err := s.get([]byte("k"))
		if err != nil || string(got) != "value" {
			t.Fatalf("set kept the caller's slices: %q %v", got, err)
		}
		got[0] = 'Y'
		if again := mustGet(t, s, "k"); again != "value" {
			t.Fatalf("get handed out the stored value: %q", again)
		}
		return s
	}},
	{"iter keeps to its bounds and order", func(t *testing.T, _ storeImpl, s kvStore) kvStore {
		put(t, s, "c", "3", "a", "1", "ba", "21", "b", "2", "b\xff", "2f", "d", "4")
		cases := []struct {
			lower, upper string
			reverse      bool
			want         string
		}{
			{"", "", false, "a=1 b=2 ba=21 b\xff=2f c=3 d=4"},
			{"", "", true, "d=4 c=3 b\xff=2f ba=21 b=2 a=1"},
			{"b", "c", false, "b=2 ba=21 b\xff=2f"},
			{"b", "c", true, "b\xff=2f ba=21 b=2"},
			{"b", "ba", false, "b=2"},
			{"bb", "c", false, "b\xff=2f"},
			{"c", "", false, "c=3 d=4"},
			{"", "b", true, "a=1"},
			{"e", "f", false, ""},
			{"c", "c", false, ""},
		}
		for _, c := range cases {
			if got := walk(t, s, c.lower, c.upper, c.reverse); got != c.want {
				t.Errorf("[%q, %q) reverse %v: %q, want %q", c.lower, c.upper, c.reverse, got, c.want)
			}
		}
		return s
	}},
	{"a batch waited for survives a restart", func(t *testing.T, impl storeImpl, s kvStore) kvStore {
		put(t, s, "a", "1")
		b1, b2 := s.newBatch(0), s.newBatch(0)
		b1.set([]byte("b"), []byte("2"))
		b2.set([]byte("a"), []byte("3"))
		w1, err := s.apply(b1)
		if err != nil {
			t.Fatal(err)
		}
		w2, err := s.apply(b2)
		if err != nil {
			t.Fatal(err)
		}
		if err := w1(); err != nil {
			t.Fatal(err)
		}
		if err := w2(); err != nil {
			t.Fatal(err)
		}
		s = impl.reopen(t, s)
		if got := walk(t, s, "", "", false); got != "a=3 b=2" {
			t.Fatalf("after a restart: %q", got)
		}
		return s
	}},
	{"calls after close are ErrClosed", func(t *testing.T, _ storeImpl, s kvStore) kvStore {
		put(t, s, "a", "1")
		if err := s.close(); err != nil {
			t.Fatal(err)
		}
		_, errGet := s.get([]byte("a"))
		_, errIter := s.iter(nil, nil, false)
		b := s.newBatch(0)
		b.set([]byte("b"), []byte("2"))
		_, errApply := s.apply(b)
		errClose := s.close()
		for what, err := range map[string]error{"get": errGet, "iter": errIter, "apply": errApply, "close": errClose} {
			if !errors.Is(err, ErrClosed) {
				t.Errorf("%s after close: %v", what, err)
			}
		}
		return nil
	}},
}

func TestStoreConformance(t *testing.T) {
	for _, impl := range storeImpls {
		for _, c := range storeConformance {
			t.Run(impl.name+"/"+c.name, func(t *testing.T) {
				if s := c.run(t, impl, impl.open(t)); s != nil {
					if err := s.close(); err != nil {
						t.Fatal(err)
					}
				}
			})
		}
	}
}

// TestMemStoreLosesWhatWasNotSynced: the memory store's crash keeps exactly
// the batches whose wait succeeded, and a failed sync is sticky, so the
// fault tests model a lost WAL tail.
func TestMemStoreLosesWhatWasNotSynced(t *testing.T) {
	m := newMemStore()
	put(t, m, "a", "1")
	b := m.newBatch(0)
	b.set([]byte("b"), []byte("2"))
	if _, err := m.apply(b); err != nil {
		t.Fatal(err)
	}
	if got := walk(t, m.crash(), "", "", false); got != "a=1" {
		t.Fatalf("crash kept an unsynced batch: %q", got)
	}
	m.arm(fault{op: opSync, n: 1})
	b = m.newBatch(0)
	b.set([]byte("c"), []byte("3"))
	wait, _ := m.apply(b)
	if err := wait(); !errors.Is(err, errInjected) {
		t.Fatalf("sync: %v", err)
	}
	b = m.newBatch(0)
	b.set([]byte("d"), []byte("4"))
	if err := commit(m, b); !errors.Is(err, errInjected) {
		t.Fatalf("a sync after a failed one: %v", err)
	}
	if got := walk(t, m, "", "", false); got != "a=1 b=2 c=3 d=4" {
		t.Fatalf("visible: %q", got)
	}
	if got := walk(t, m.crash(), "", "", false); got != "a=1" {
		t.Fatalf("durable after a failed sync: %q", got)
	}
	if f := m.injected(); len(f) != 1 || !bytes.Contains([]byte(f[0]), []byte("sync #1")) {
		t.Fatalf("failures recorded: %q", f)
	}
}

// TestMemStoreKeyFault: a read of the chosen key fails, in a get or in the
// walk that reaches it, and nothing else does.
func TestMemStoreKeyFault(t *testing.T) {
	m := newMemStore()
	put(t, m, "a", "1", "b", "2", "c", "3")
	m.arm(fault{op: opRead, key: []byte("b")})
	if _, err := m.get([]byte("b")); !errors.Is(err, errInjected) {
		t.Fatalf("get b: %v", err)
	}
	if v := mustGet(t, m, "a"); v != "1" {
		t.Fatal(v)
	}
	for _, reverse := range []bool{false, true} {
		it, _ := m.iter(nil, nil, reverse)
		var seen []string
		for it.next() {
			seen = append(seen, string(it.key()))
		}
		want := map[bool]string{false: "a", true: "c"}[reverse]
		if err := it.close(); !errors.Is(err, errInjected) || strings.Join(seen, "") != want {
			t.Fatalf("reverse %v: saw %q before %v", reverse, seen, err)
		}
	}
	if n := len(m.injected()); n != 3 {
		t.Fatalf("%d failures recorded, want 3: %s", n, m.describe())
	}
}
