package log

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/vfs"

	"github.com/histor-observer/histor/log/format"
	"github.com/histor-observer/histor/log/mtl"
)

func TestNewLogSignsEmptyHead(t *testing.T) {
	l := openTest(t, testConfig(t.TempDir()))
	h := l.Latest()
	if h.Size != 0 || h.Root != naiveRoot(nil) {
		t.Fatalf("new head size %d root %x", h.Size, h.Root)
	}
	sth, err := format.VerifySTH(h.STH, testKey().Public().(ed25519PublicKey))
	if err != nil || sth.TreeSize != 0 || sth.Log != testDID {
		t.Fatalf("VerifySTH: %v %+v", err, sth)
	}
	v, _ := format.NewVerifier(testOrigin, testKey().Public().(ed25519PublicKey))
	cp, err := format.ParseCheckpoint(h.Checkpoint, v)
	if err != nil || cp.Size != 0 || cp.Root != h.Root {
		t.Fatalf("ParseCheckpoint: %v %+v", err, cp)
	}
	want := "histor.test/log\n0\n47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=\n"
	if !bytes.HasPrefix(h.Checkpoint, []byte(want+"\n— histor.test/log ")) {
		t.Fatalf("checkpoint:\n%s", h.Checkpoint)
	}
}

func TestAppendAndRead(t *testing.T) {
	dir := t.TempDir()
	l := openTest(t, testConfig(dir))
	ctx := context.Background()
	ev := Evidence{Kind: "toolsets", Body: []byte(`{"tools":[]}`)}
	first, err := l.Append(ctx, []Entry{testEntry(0), testEntry(1)}, []Evidence{ev})
	if err != nil || first != 0 {
		t.Fatalf("Append: %d %v", first, err)
	}
	if first := appendN(t, l, 2, 3); first != 2 {
		t.Fatalf("second append first = %d", first)
	}
	if l.Size() != 5 || l.Latest().Size != 5 {
		t.Fatalf("size %d", l.Size())
	}
	got, err := l.Entries(1, 4)
	if err != nil || len(got) != 3 || !bytes.Equal(got[0], testEntry(1).Label) {
		t.Fatalf("Entries: %v %q", err, got)
	}
	if e, err := l.Entry(4); err != nil || !bytes.Equal(e, testEntry(4).Label) {
		t.Fatalf("Entry(4): %v %q", err, e)
	}
	if _, err := l.Entry(5); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Entry(5): %v", err)
	}
	if i, err := l.LabelIndex(testEntry(3).ID); err != nil || i != 3 {
		t.Fatalf("LabelIndex: %d %v", i, err)
	}
	if _, err := l.LabelIndex("urn:uuid:nope"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("LabelIndex(missing): %v", err)
	}
	if b, err := l.Evidence("toolsets", mtl.SRI(ev.Body)); err != nil || !bytes.Equal(b, ev.Body) {
		t.Fatalf("Evidence: %v", err)
	}
	if _, err := l.Evidence("descriptors", mtl.SRI(ev.Body)); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Evidence under another kind: %v", err)
	}
	var re *RangeError
	if _, err := l.Entries(3, 6); !errors.As(err, &re) {
		t.Fatalf("Entries past the end: %v", err)
	}
	if _, err := l.Entries(0, MaxRange+1); !errors.As(err, &re) {
		t.Fatalf("absurd range: %v", err)
	}
}

func TestAppendRefusals(t *testing.T) {
	l := openTest(t, testConfig(t.TempDir()))
	ctx := context.Background()
	appendN(t, l, 0, 1)
	var ee *EntryError
	cases := map[string][]Entry{
		"too large":      {{ID: "urn:uuid:big", Label: make([]byte, MaxEntryBytes+1)}},
		"empty":          {{ID: "urn:uuid:empty"}},
		"no id":          {{Label: []byte(`{}`)}},
		"twice in call":  {testEntry(5), testEntry(5)},
		"already logged": {testEntry(7), testEntry(0)},
	}
	for name, entries := range cases {
		if _, err := l.Append(ctx, entries, nil); !errors.As(err, &ee) {
			t.Errorf("%s: err = %v, want *EntryError", name, err)
		}
	}
	if _, err := l.Append(ctx, nil, []Evidence{{Kind: "secrets", Body: []byte("{}")}}); !errors.As(err, &ee) {
		t.Errorf("unknown evidence kind: %v", err)
	}
	if l.Size() != 1 {
		t.Fatalf("refused appends changed the size to %d", l.Size())
	}
	// The largest allowed entry goes in.
	big := Entry{ID: "urn:uuid:max", Label: bytes.Repeat([]byte("a"), MaxEntryBytes)}
	if i, err := l.Append(ctx, []Entry{big}, nil); err != nil || i != 1 {
		t.Fatalf("max-size entry: %d %v", i, err)
	}
	b, err := l.EntryBundle(0, 2)
	if err != nil || len(b) != 2+len(testEntry(0).Label)+2+MaxEntryBytes {
		t.Fatalf("bundle: %v len %d", err, len(b))
	}
}

func TestReopenAndHeads(t *testing.T) {
	dir := t.TempDir()
	clock := &stepClock{t: time.Date(2026, 9, 23, 9, 13, 4, 500, time.UTC)}
	cfg := testConfig(dir)
	cfg.Now = clock.now
	l := openTest(t, cfg)
	appendN(t, l, 0, 10)
	h10 := l.Latest()
	clock.t = clock.t.Add(-time.Hour) // the clock goes back
	appendN(t, l, 10, 5)
	h15 := l.Latest()
	if h15.Time.Before(h10.Time) || !h10.Time.Equal(time.Date(2026, 9, 23, 9, 13, 4, 0, time.UTC)) {
		t.Fatalf("head times %v then %v", h10.Time, h15.Time)
	}
	clock.t = clock.t.Add(3 * time.Hour)
	re, err := l.SignHead(context.Background())
	if err != nil || re.Size != 15 || !re.Time.After(h15.Time) {
		t.Fatalf("SignHead: %v %+v", err, re)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l2 := openTest(t, cfg)
	if got := l2.Latest(); got.Size != 15 || !bytes.Equal(got.STH, re.STH) {
		t.Fatalf("reopened head %+v", got)
	}
	if h, err := l2.HeadAt(10); err != nil || !bytes.Equal(h.STH, h10.STH) {
		t.Fatalf("HeadAt(10): %v", err)
	}
	// One head per size: the first signed at 15 stays the one served for
	// 15, though the re-signed head is the latest.
	if h, err := l2.HeadAt(15); err != nil || !bytes.Equal(h.STH, h15.STH) || bytes.Equal(h.STH, re.STH) {
		t.Fatalf("HeadAt(15) is not the first head signed at 15: %v", err)
	}
	if _, err := l2.HeadAt(11); !errors.Is(err, ErrNotFound) {
		t.Fatalf("HeadAt(11): %v", err)
	}
	if first := appendN(t, l2, 15, 1); first != 15 {
		t.Fatalf("append after reopen at %d", first)
	}
	requireFsckClean(t, l2, dir, cfg)
}

func TestOpenRefusesOtherKeyOrOrigin(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(dir)
	l := openTest(t, cfg)
	l.Close()
	other := cfg
	other.Key = ed25519NewKeyFromSeed(bytes.Repeat([]byte{9}, 32))
	if _, err := Open(context.Background(), other); err == nil {
		t.Fatal("opened with another key")
	}
	other = cfg
	other.Origin = "elsewhere.example/log"
	if _, err := Open(context.Background(), other); err == nil {
		t.Fatal("opened with another origin")
	}
}

// requireFsckClean closes l, runs Fsck on dir and reopens nothing.
func requireFsckClean(t *testing.T, l *Log, dir string, cfg Config) {
	t.Helper()
	size := l.Size()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	rep, err := Fsck(context.Background(), dir, nil)
	if err != nil {
		t.Fatalf("Fsck: %v", err)
	}
	if len(rep.Problems) != 0 || rep.Size != size {
		t.Fatalf("Fsck: size %d (want %d), problems %q", rep.Size, size, rep.Problems)
	}
}

func TestAppendAfterClose(t *testing.T) {
	l := openTest(t, testConfig(t.TempDir()))
	appendN(t, l, 0, 3)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(context.Background(), []Entry{testEntry(9)}, nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("Append after Close: %v", err)
	}
	if _, err := l.SignHead(context.Background()); !errors.Is(err, ErrClosed) {
		t.Fatalf("SignHead after Close: %v", err)
	}
}

// TestEachEntry visits a range across bundle boundaries in order, with the
// right index for each label, and stops at the callback's first error.
func TestEachEntry(t *testing.T) {
	l := openTest(t, testConfig(t.TempDir()))
	appendN(t, l, 0, 600)
	next := uint64(250)
	err := l.EachEntry(250, 530, func(i uint64, label []byte) error {
		if i != next || !bytes.Equal(label, testEntry(int(i)).Label) {
			return fmt.Errorf("visited %d (%q), want %d", i, label, next)
		}
		next++
		return nil
	})
	if err != nil || next != 530 {
		t.Fatalf("EachEntry [250, 530): stopped at %d: %v", next, err)
	}
	stop := errors.New("enough")
	calls := 0
	err = l.EachEntry(0, 600, func(uint64, []byte) error {
		if calls++; calls == 300 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) || calls != 300 {
		t.Fatalf("after the callback's error: %d calls, %v", calls, err)
	}
}

// TestUnfinishedCreationIsRedone: a log whose creation was cut short leaves
// its marker beside whatever Pebble had written; Fsck says there is no log,
// and the next Open empties the directory and creates the log.
func TestUnfinishedCreationIsRedone(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "log")
	if _, err := Fsck(context.Background(), dir, nil); !errors.Is(err, ErrNoLog) {
		t.Fatalf("Fsck of a missing directory: %v", err)
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := Fsck(context.Background(), dir, nil); !errors.Is(err, ErrNoLog) {
		t.Fatalf("Fsck of an empty directory: %v", err)
	}
	// What a kill during creation leaves: the marker, Pebble files, no CURRENT.
	for name, body := range map[string]string{creatingMarker: "", "MANIFEST-000099": "partial", "000098.log": "partial"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := Fsck(context.Background(), dir, nil); !errors.Is(err, ErrNoLog) {
		t.Fatalf("Fsck of an unfinished log: %v", err)
	}
	l := openTest(t, testConfig(dir))
	if l.Size() != 0 || l.Latest().Size != 0 || len(l.Latest().Checkpoint) == 0 {
		t.Fatalf("new log: size %d, head %+v", l.Size(), l.Latest())
	}
	for _, name := range []string{creatingMarker, "MANIFEST-000099", "000098.log"} {
		if _, err := os.Stat(filepath.Join(dir, name)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s of the unfinished log is still there: %v", name, err)
		}
	}
	appendN(t, l, 0, 3)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if rep, err := Fsck(context.Background(), dir, nil); err != nil || len(rep.Problems) > 0 {
		t.Fatalf("Fsck of the created log: %v %v", err, rep)
	}
}

// TestCreationMarkerIsLocked: while one process holds the marker, another
// Open neither empties the directory nor creates a log; it says why.
func TestCreationMarkerIsLocked(t *testing.T) {
	dir := t.TempDir()
	held, err := lockMarker(vfs.Default, filepath.Join(dir, creatingMarker))
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	if err := os.WriteFile(filepath.Join(dir, "000098.log"), []byte("being written"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(context.Background(), testConfig(dir)); err == nil || !strings.Contains(err.Error(), "another process") {
		t.Fatalf("Open beside a creation in progress: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "000098.log")); err != nil {
		t.Fatalf("the other process's file was removed: %v", err)
	}
}

// TestCreationThroughSymlinks: a log directory that is a symlink to an empty
// directory gets its log where the link points, and the link stays; a
// dangling link is refused, never replaced by a new log.
func TestCreationThroughSymlinks(t *testing.T) {
	parent := t.TempDir()
	target := filepath.Join(parent, "elsewhere")
	if err := os.Mkdir(target, 0o700); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(parent, "log")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	l := openTest(t, testConfig(link))
	appendN(t, l, 0, 2)
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the link was replaced: %v %v", fi, err)
	}
	if _, err := os.Stat(filepath.Join(target, "CURRENT")); err != nil {
		t.Fatalf("no store where the link points: %v", err)
	}
	dangling := filepath.Join(parent, "dangling")
	if err := os.Symlink(filepath.Join(parent, "unmounted"), dangling); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(context.Background(), testConfig(dangling)); err == nil {
		t.Fatal("opened a log through a dangling symlink")
	}
	if fi, err := os.Lstat(dangling); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the dangling link was replaced: %v %v", fi, err)
	}
}

// TestMissingRecordIsCorruption: a tile or entry bundle that vanished from a
// served store is reported as damage, never as "not found", so the API
// cannot take it for a request beyond the log.
func TestMissingRecordIsCorruption(t *testing.T) {
	l := openTest(t, testConfig(t.TempDir()))
	appendN(t, l, 0, 600)
	for _, k := range [][]byte{tileKey(0, 0), bundleKey(0)} {
		if err := l.store.(*pebbleStore).db.Delete(k, nil); err != nil {
			t.Fatal(err)
		}
	}
	var ce *CorruptError
	_, errProof := l.InclusionProof(5, 600)
	_, errTile := l.HashTile(0, 0, 256)
	_, errBundle := l.EntryBundle(0, 256)
	_, errEntries := l.Entries(0, 10)
	for what, err := range map[string]error{"proof": errProof, "tile": errTile, "bundle": errBundle, "entries": errEntries} {
		if !errors.As(err, &ce) || errors.Is(err, ErrNotFound) {
			t.Errorf("%s over a missing record: %v, want a *CorruptError that is not ErrNotFound", what, err)
		}
	}
}
