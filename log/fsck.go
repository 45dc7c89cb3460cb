package log

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sort"

	"github.com/cockroachdb/pebble/vfs"
	"golang.org/x/mod/sumdb/note"

	"github.com/histor-observer/histor/log/format"
)

// FsckReport is what Fsck found. An empty Problems means the store agrees
// with itself everywhere.
type FsckReport struct {
	Problems []string
	Size     uint64 // entries found
	Heads    int    // heads checked
}

// maxFsckProblems stops a badly broken store from filling memory.
const maxFsckProblems = 1000

type fsck struct {
	s        kvStore
	report   *FsckReport
	pub      ed25519.PublicKey
	verifier note.Verifier
	sthType  string // the type member of this log's JSON heads (storedSTHType)
	logger   *slog.Logger
}

func (f *fsck) problem(format string, args ...any) {
	if len(f.report.Problems) < maxFsckProblems {
		f.report.Problems = append(f.report.Problems, fmt.Sprintf(format, args...))
	}
}

// Fsck opens the store in dir read-only and re-derives every tile and every
// head's root from the stored entries, reporting each disagreement. It
// returns an error only when it could not check at all.
func Fsck(ctx context.Context, dir string, logger *slog.Logger) (*FsckReport, error) {
	return fsckDir(ctx, vfs.Default, dir, logger)
}

// fsckDir is Fsck of dir in fs.
func fsckDir(ctx context.Context, fs vfs.FS, dir string, logger *slog.Logger) (*FsckReport, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	s, err := openPebble(dir, storeOptions{fs: fs, cacheBytes: 64 << 20}, logger, true)
	if err != nil {
		return nil, err
	}
	defer s.close()
	return fsckStore(ctx, s, logger)
}

// fsckStore is Fsck over any store.
func fsckStore(ctx context.Context, s kvStore, logger *slog.Logger) (*FsckReport, error) {
	f := &fsck{s: s, report: &FsckReport{}, logger: logger}
	if err := f.readMeta(); err != nil {
		return nil, err
	}
	heads := f.checkHeads()
	if err := f.checkEntries(ctx, heads); err != nil {
		return nil, err
	}
	f.checkLabelCount()
	return f.report, nil
}

func (f *fsck) readMeta() error {
	meta, err := f.s.get(keyMeta)
	if err != nil || len(meta) <= ed25519.PublicKeySize {
		return corrupt("meta record", fmt.Errorf("unreadable: %v", err))
	}
	f.pub = ed25519.PublicKey(meta[:ed25519.PublicKeySize])
	v, err := format.NewVerifier(string(meta[ed25519.PublicKeySize:]), f.pub)
	if err != nil {
		return corrupt("meta record", err)
	}
	f.verifier = v
	f.sthType = storedSTHType(f.s)
	return nil
}

// storedSTHType is the type of the log's JSON heads, read from its latest
// head: Fsck has no Config, and a receipts log's heads are typed
// format.ReceiptsSTHType. Anything unreadable counts as the label log's, so
// the head checks report it.
func storedSTHType(s kvStore) string {
	raw, err := s.get(keyLatest)
	if err != nil {
		return format.STHType
	}
	rec, err := decodeHead(raw)
	if err != nil {
		return format.STHType
	}
	if _, err := format.ParseTypedSTH(format.ReceiptsSTHType, rec.STH); err == nil {
		return format.ReceiptsSTHType
	}
	return format.STHType
}

// checkHeads verifies every stored head and returns them by size.
func (f *fsck) checkHeads() []*headRecord {
	var heads []*headRecord
	err := scan(f.s, []byte{prefixHead}, []byte{prefixHead + 1}, func(k, v []byte) error {
		rec, err := decodeHead(v)
		if err == nil && !bytes.Equal(k, headKey(rec.Size, rec.Seq)) {
			err = fmt.Errorf("stored under the wrong key")
		}
		if err == nil {
			err = checkHead(rec, f.pub, f.verifier, f.sthType)
		}
		if err != nil {
			f.problem("head %x: %v", k, err)
			return nil
		}
		heads = append(heads, rec)
		return nil
	})
	if err != nil {
		f.problem("reading heads: %v", err)
	}
	f.report.Heads = len(heads)
	sort.SliceStable(heads, func(i, j int) bool { return heads[i].Seq < heads[j].Seq })
	f.checkHeadOrder(heads)
	return heads
}

// checkHeadOrder: sizes never decrease in signing order, times never go
// back, and the latest record is the last head.
func (f *fsck) checkHeadOrder(heads []*headRecord) {
	for i := 1; i < len(heads); i++ {
		if heads[i].Size < heads[i-1].Size || heads[i].Time.Before(heads[i-1].Time) {
			f.problem("head seq %d (size %d) goes back from seq %d (size %d)", heads[i].Seq, heads[i].Size, heads[i-1].Seq, heads[i-1].Size)
		}
	}
	raw, err := f.s.get(keyLatest)
	if err != nil {
		f.problem("latest head: %v", err)
		return
	}
	if len(heads) == 0 || !bytes.Equal(raw, heads[len(heads)-1].encode()) {
		f.problem("latest head is not the last head signed")
	}
}

// checkEntries walks every entry in order, rebuilding the tiles and
// comparing each completed tile, each head's root and each label index.
func (f *fsck) checkEntries(ctx context.Context, heads []*headRecord) error {
	sort.SliceStable(heads, func(i, j int) bool { return heads[i].Size < heads[j].Size })
	tiles := &tileState{}
	put := func(level int, n uint64, data []byte) {
		if len(data) == fullTile {
			f.compareTile(level, n, data)
		}
	}
	f.checkRootsAt(tiles, &heads)
	errShort := errors.New("short bundle")
	err := scan(f.s, []byte{prefixBundle}, []byte{prefixBundle + 1}, func(k, v []byte) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		n := tiles.size / tileWidth
		if tiles.size%tileWidth != 0 || !bytes.Equal(k, bundleKey(n)) {
			f.problem("entry bundle %d missing or short (next key %x at size %d)", n, k, tiles.size)
			return errShort
		}
		offs, err := format.BundleOffsets(v)
		if err != nil {
			f.problem("entry bundle %d: %v", n, err)
			return errShort
		}
		for k := range offs {
			entry := format.BundleEntry(v, offs, k)
			f.checkLabelIndex(tiles.size, entry)
			tiles.appendLeaves([][32]byte{format.LeafHash(entry)}, put)
			f.checkRootsAt(tiles, &heads)
		}
		return nil
	})
	switch {
	case ctx.Err() != nil && errors.Is(err, ctx.Err()):
		return err
	case err != nil && !errors.Is(err, errShort):
		f.problem("reading entries: %v", err)
	}
	f.report.Size = tiles.size
	for _, h := range heads {
		f.problem("head size %d is beyond the %d entries stored", h.Size, tiles.size)
	}
	f.checkEdges(tiles)
	return nil
}

// checkRootsAt compares the root with every head at the current size and
// drops them from heads.
func (f *fsck) checkRootsAt(tiles *tileState, heads *[]*headRecord) {
	hs := *heads
	for len(hs) > 0 && hs[0].Size == tiles.size {
		if root := tiles.root(); root != hs[0].Root {
			f.problem("head seq %d size %d: root %x, entries give %x", hs[0].Seq, hs[0].Size, hs[0].Root, root)
		}
		hs = hs[1:]
	}
	*heads = hs
}

func (f *fsck) compareTile(level int, n uint64, want []byte) {
	got, err := f.s.get(tileKey(level, n))
	if err != nil {
		f.problem("tile %d/%d: %v", level, n, err)
	} else if !bytes.Equal(got, encodeTile(want)) {
		f.problem("tile %d/%d: stored hashes differ from the entries' (%d bytes stored)", level, n, len(got))
	}
}

// checkEdges compares the partial tiles and refuses tiles beyond the tree.
func (f *fsck) checkEdges(tiles *tileState) {
	for level, e := range tiles.edges {
		if len(e) > 0 {
			f.compareTile(level, tiles.edgeIndex(level), e)
		}
	}
	err := scan(f.s, []byte{prefixTile}, []byte{prefixTile + 1}, func(k, _ []byte) error {
		if len(k) != 10 {
			f.problem("tile key %x malformed", k)
			return nil
		}
		level, n := int(k[1]), binary.BigEndian.Uint64(k[2:])
		if n >= tilesAt(tiles.size, level) {
			f.problem("tile %d/%d lies beyond the tree of size %d", level, n, tiles.size)
		}
		return nil
	})
	if err != nil {
		f.problem("reading tiles: %v", err)
	}
}

// checkLabelIndex checks that the label's id member maps back to index.
func (f *fsck) checkLabelIndex(index uint64, label []byte) {
	var doc struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(label, &doc); err != nil || doc.ID == "" {
		f.problem("entry %d: no label id (%v)", index, err)
		return
	}
	v, err := f.s.get(labelKey(doc.ID))
	if err != nil || len(v) != 8 || binary.BigEndian.Uint64(v) != index {
		f.problem("entry %d: label index for %q does not point back (%x, %v)", index, doc.ID, v, err)
	}
}

func (f *fsck) checkLabelCount() {
	var n uint64
	err := scan(f.s, []byte{prefixLabel}, []byte{prefixLabel + 1}, func(_, _ []byte) error {
		n++
		return nil
	})
	if err != nil {
		f.problem("reading label index: %v", err)
	}
	if n != f.report.Size {
		f.problem("%d label ids indexed for %d entries", n, f.report.Size)
	}
}
