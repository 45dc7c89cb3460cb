package log

import (
	"bytes"
	"crypto/ed25519"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/cockroachdb/pebble/vfs"
	"golang.org/x/mod/sumdb/note"

	"github.com/histor-observer/histor/log/format"
)

// load reads and checks the stored state, or starts a new log in an empty
// store. Nothing is signed unless the store is empty or every check passed.
func (l *Log) load() error {
	pub := l.cfg.Key.Public().(ed25519.PublicKey)
	meta, err := l.store.get(keyMeta)
	if errors.Is(err, ErrNotFound) {
		return l.create(pub)
	}
	if err != nil {
		return corrupt("meta record", err)
	}
	if len(meta) < ed25519.PublicKeySize || !bytes.Equal(meta[:ed25519.PublicKeySize], pub) {
		return errors.New("opening log: the key is not the one this log was created with")
	}
	if string(meta[ed25519.PublicKeySize:]) != l.cfg.Origin {
		return fmt.Errorf("opening log: origin %q is not this log's %q", l.cfg.Origin, meta[ed25519.PublicKeySize:])
	}
	rec, err := readLatest(l.store, pub, l.verifier, l.cfg.STHType)
	if err != nil {
		return err
	}
	if sth, _ := format.ParseTypedSTH(l.cfg.STHType, rec.STH); sth.Log != l.cfg.DID {
		return fmt.Errorf("opening log: DID %q is not this log's %q", l.cfg.DID, sth.Log)
	}
	tiles, err := checkTree(l.store, rec)
	if err != nil {
		return err
	}
	if l.bundle, err = checkBundles(l.store, rec.Size); err != nil {
		return err
	}
	if l.ids, err = loadIDFilter(l.store, rec.Size); err != nil {
		return err
	}
	l.latest, l.tiles = *rec, tiles
	return nil
}

// create starts a log in an empty store: the meta record and a signed
// size-0 head, in one synced write.
func (l *Log) create(pub ed25519.PublicKey) error {
	if _, err := firstKey(l.store, nil, nil, false); !errors.Is(err, ErrNotFound) {
		if err != nil {
			return corrupt("store", err)
		}
		return corrupt("meta record", errors.New("missing from a non-empty store"))
	}
	l.tiles, l.ids = &tileState{}, newIDFilter(0)
	rec, err := l.newHead(l.tiles, 0)
	if err != nil {
		return err
	}
	b := l.store.newBatch(1024)
	b.set(keyMeta, append(append([]byte(nil), pub...), l.cfg.Origin...))
	l.putHead(b, rec)
	if err := commit(l.store, b); err != nil {
		return fmt.Errorf("creating log: %w", err)
	}
	l.latest = *rec
	l.logger.Info("new log", "origin", l.cfg.Origin, "did", l.cfg.DID)
	return nil
}

// readLatest reads the latest head and checks both its signatures and that
// it is the last head stored.
func readLatest(s kvStore, pub ed25519.PublicKey, v note.Verifier, sthType string) (*headRecord, error) {
	raw, err := s.get(keyLatest)
	if err != nil {
		return nil, corrupt("latest head", err)
	}
	rec, err := decodeHead(raw)
	if err != nil {
		return nil, corrupt("latest head", err)
	}
	if err := checkHead(rec, pub, v, sthType); err != nil {
		return nil, corrupt("latest head", err)
	}
	last, err := firstKey(s, []byte{prefixHead}, []byte{prefixHead + 1}, true)
	if err != nil {
		return nil, corrupt("head history", err)
	}
	if !bytes.Equal(last, headKey(rec.Size, rec.Seq)) {
		return nil, corrupt("head history", fmt.Errorf("last stored head is not the latest (size %d seq %d)", rec.Size, rec.Seq))
	}
	return rec, nil
}

// checkHead verifies a stored head's two signed forms and that they say what
// the record says.
func checkHead(rec *headRecord, pub ed25519.PublicKey, v note.Verifier, sthType string) error {
	sth, err := format.VerifyTypedSTH(sthType, rec.STH, pub)
	if err != nil {
		return err
	}
	if sth.TreeSize != rec.Size || sth.Root != rec.Root || !sth.Time.Equal(rec.Time) {
		return errors.New("STH does not match the head record")
	}
	cp, err := format.ParseCheckpoint(rec.Checkpoint, v)
	if err != nil {
		return err
	}
	if cp.Size != rec.Size || cp.Root != rec.Root {
		return errors.New("checkpoint does not match the head record")
	}
	return nil
}

// checkTree loads the edge tiles for the head's size and checks that they
// give the head's root and that every stored tile hangs together.
func checkTree(s kvStore, rec *headRecord) (*tileState, error) {
	t := &tileState{size: rec.Size}
	levels, index, width := edgeWidths(rec.Size)
	for i, level := range levels {
		for len(t.edges) <= level {
			t.edges = append(t.edges, make([]byte, 0, fullTile))
		}
		v, err := s.get(tileKey(level, index[i]))
		what := fmt.Sprintf("tile %d/%d", level, index[i])
		if err != nil {
			return nil, corrupt(what, err)
		}
		data, err := decodeTile(v)
		if err != nil {
			return nil, corrupt(what, err)
		}
		if len(data) != width[i]*hashSize {
			return nil, corrupt(what, fmt.Errorf("%d bytes, want %d for size %d", len(data), width[i]*hashSize, rec.Size))
		}
		t.edges[level] = append(t.edges[level], data...)
	}
	if root := t.root(); root != rec.Root {
		return nil, corrupt("tiles", fmt.Errorf("root %x from stored tiles, head says %x", root, rec.Root))
	}
	if err := checkTileChain(s, rec.Size); err != nil {
		return nil, err
	}
	return t, nil
}

// checkTileChain checks every stored tile: that none of the tree's is
// missing, its interior nodes, and for a full tile that its root is the hash
// its parent tile holds for it. With the edge tiles checked against the
// head's root, this ties every stored hash to the signed head (about 0.2 s
// per million leaves). That the leaves match the entries is Fsck's longer
// job.
func checkTileChain(s kvStore, size uint64) error {
	c := &tileChain{s: s, seq: tileSequence{size: size}}
	err := scan(s, []byte{prefixTile}, []byte{prefixTile + 1}, c.check)
	var ce *CorruptError
	if err != nil && !errors.As(err, &ce) {
		return corrupt("tiles", err)
	}
	if err != nil {
		return err
	}
	return c.seq.next(maxTileLevel+1, 0)
}

// tileChain checks the stored tiles one by one in key order, keeping the
// parent tile of the last full one.
type tileChain struct {
	s                 kvStore
	seq               tileSequence
	parentKey, parent []byte
}

func (c *tileChain) check(k, v []byte) error {
	if len(k) != 10 {
		return corrupt(fmt.Sprintf("tile key %x", k), errors.New("malformed"))
	}
	level, n := int(k[1]), binary.BigEndian.Uint64(k[2:])
	if err := c.seq.next(level, n); err != nil {
		return err
	}
	what := fmt.Sprintf("tile %d/%d", level, n)
	hashes, err := decodeTile(v)
	if err != nil {
		return corrupt(what, err)
	}
	size := c.seq.size
	if have := size >> (tileHeight * uint(level)); n > have/tileWidth || n*tileWidth+uint64(len(hashes)/hashSize) > have {
		return corrupt(what, fmt.Errorf("lies beyond the tree of size %d", size))
	}
	if len(hashes) < fullTile {
		return nil // an edge tile, checked against the root already
	}
	if pk := tileKey(level+1, n/tileWidth); !bytes.Equal(pk, c.parentKey) {
		if c.parent, err = c.s.get(pk); err != nil {
			return corrupt(fmt.Sprintf("tile %d/%d", level+1, n/tileWidth), err)
		}
		c.parentKey = pk
	}
	want, err := tileNode(c.parent, 0, int64(n%tileWidth))
	if err != nil || want != fullTileRoot(v) {
		return corrupt(what, fmt.Errorf("root is not the hash its parent tile holds (%v)", err))
	}
	return nil
}

// maxTileLevel is the highest tile level a 64-bit tree size can reach.
const maxTileLevel = 64 / tileHeight

// tileSequence checks that the stored tiles, visited in key order (level,
// then index), are exactly the tiles of a tree of size: at each level every
// index from 0 up to the last, none missing.
type tileSequence struct {
	size  uint64
	level int    // the level being visited
	want  uint64 // the index expected next at that level
}

// next accepts tile level/n, or reports the first tile of the tree that was
// skipped on the way to it. Levels above maxTileLevel close the sequence.
func (s *tileSequence) next(level int, n uint64) error {
	for s.level < level {
		if s.level <= maxTileLevel && s.want < tilesAt(s.size, s.level) {
			return corrupt(fmt.Sprintf("tile %d/%d", s.level, s.want), errMissing)
		}
		s.level, s.want = s.level+1, 0
	}
	if n != s.want && level <= maxTileLevel && s.want < tilesAt(s.size, level) {
		return corrupt(fmt.Sprintf("tile %d/%d", level, s.want), errMissing)
	}
	s.want = n + 1
	return nil
}

// tilesAt is how many tiles (full and partial) level holds in a tree of size.
func tilesAt(size uint64, level int) uint64 {
	have := size >> (tileHeight * uint(level))
	return have/tileWidth + min(have%tileWidth, 1)
}

// checkBundles checks that the entry bundles end exactly at size and that
// the last entry's leaf hash is the one in its tile; it returns the partial
// bundle the sequencer continues.
func checkBundles(s kvStore, size uint64) ([]byte, error) {
	next := (size + tileWidth - 1) / tileWidth
	switch _, err := s.get(bundleKey(next)); {
	case err == nil:
		return nil, corrupt(fmt.Sprintf("entry bundle %d", next), errors.New("present beyond the head"))
	case !errors.Is(err, ErrNotFound):
		return nil, corrupt(fmt.Sprintf("entry bundle %d", next), err)
	}
	if size == 0 {
		return nil, nil
	}
	n := (size - 1) / tileWidth
	what := fmt.Sprintf("entry bundle %d", n)
	bundle, err := s.get(bundleKey(n))
	if err != nil {
		return nil, corrupt(what, err)
	}
	offs, err := format.BundleOffsets(bundle)
	if err != nil {
		return nil, corrupt(what, err)
	}
	if uint64(len(offs)) != size-n*tileWidth {
		return nil, corrupt(what, fmt.Errorf("%d entries, want %d for size %d", len(offs), size-n*tileWidth, size))
	}
	tile, err := s.get(tileKey(0, n))
	if err == nil {
		tile, err = decodeTile(tile)
	}
	if err != nil {
		return nil, corrupt(fmt.Sprintf("tile 0/%d", n), err)
	}
	off := int((size-1)%tileWidth) * hashSize
	last := format.BundleEntry(bundle, offs, len(offs)-1)
	if len(tile) < off+hashSize || [32]byte(tile[off:off+hashSize]) != format.LeafHash(last) {
		return nil, corrupt(what, fmt.Errorf("entry %d's leaf hash is not the one in its tile", size-1))
	}
	if len(offs) == tileWidth {
		return nil, nil
	}
	return bundle, nil
}

// creatingMarker is the file a new log is made under: written (and locked)
// before Pebble creates anything in the directory, removed once the log's
// meta record and size-0 head are durable.
const creatingMarker = ".histor-creating"

// createIfMissing makes a new log (its meta record and signed size-0 head)
// when cfg.Dir is missing or empty, in place, under a marker file. A crash
// while creating leaves the marker; the next Open then knows that nothing in
// the directory was ever acknowledged or served, empties it and creates
// again, instead of refusing it as a damaged store. The marker is locked
// while in use, so a second process never empties a log being made.
func createIfMissing(cfg Config, l *Log) error {
	fs, dir := cfg.FS, cfg.Dir
	names, err := fs.List(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		// The new directory's name is durable once its parent is synced.
		if err := fs.MkdirAll(dir, 0o700); err != nil {
			return fmt.Errorf("creating log directory: %w", err)
		}
		if err := syncDir(fs, fs.PathDir(dir)); err != nil {
			return err
		}
	case err != nil:
		return fmt.Errorf("reading log directory: %w", err)
	}
	unfinished := slices.Contains(names, creatingMarker)
	if len(names) > 0 && !unfinished {
		return nil
	}
	marker := fs.PathJoin(dir, creatingMarker)
	lock, err := lockMarker(fs, marker)
	if err != nil {
		return err
	}
	defer lock.Close()
	if unfinished {
		l.logger.Warn("removing a log whose creation never finished", "dir", dir)
		if err := emptyExcept(fs, dir, creatingMarker); err != nil {
			return err
		}
	}
	made := &Log{cfg: cfg, logger: l.logger, signer: l.signer, verifier: l.verifier}
	if made.store, err = openPebble(dir, cfg.storeOptions(), l.logger, false); err != nil {
		return err
	}
	err = made.load()
	if cerr := made.closeStore(); err == nil && cerr != nil {
		err = fmt.Errorf("creating log: %w", cerr)
	}
	if err != nil {
		return err
	}
	if err := fs.Remove(marker); err != nil {
		return fmt.Errorf("creating log: %w", err)
	}
	return syncDir(fs, dir)
}

// lockMarker creates (or opens a leftover) marker file, takes an exclusive
// lock on it without waiting, and makes its name durable.
func lockMarker(fs vfs.FS, path string) (io.Closer, error) {
	lock, err := fs.Lock(path)
	if err != nil {
		return nil, fmt.Errorf("creating log: another process is creating the log in %s: %w", fs.PathDir(path), err)
	}
	if err := syncDir(fs, fs.PathDir(path)); err != nil {
		lock.Close()
		return nil, err
	}
	return lock, nil
}

// emptyExcept removes everything in dir but the entry named keep.
func emptyExcept(fs vfs.FS, dir, keep string) error {
	names, err := fs.List(dir)
	if err != nil {
		return fmt.Errorf("reading log directory: %w", err)
	}
	for _, name := range names {
		if name == keep {
			continue
		}
		if err := fs.RemoveAll(fs.PathJoin(dir, name)); err != nil {
			return fmt.Errorf("removing an unfinished log: %w", err)
		}
	}
	return nil
}

// syncDir makes the entries of dir durable.
func syncDir(fs vfs.FS, dir string) error {
	d, err := fs.OpenDir(dir)
	if err != nil {
		return fmt.Errorf("creating log: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("creating log: syncing %s: %w", dir, err)
	}
	return nil
}
