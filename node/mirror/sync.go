package mirror

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"filippo.io/torchwood"
	"github.com/cockroachdb/pebble"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/histor-observer/histor/log/format"
	"github.com/histor-observer/histor/log/mtl"
)

// Result is what one Sync did.
type Result struct {
	Source       string
	Checkpoint   uint64 // size of the source's checkpoint
	Entries      uint64 // entries added
	Observations int    // observations the index gained
}

// Sync reads src's checkpoint of did's log and, when it is newer than the mirror's and joins
// it, mirrors every entry up to it. A refused source is a *SourceError, a fork a *ForkError;
// other errors (a source that did not answer, a cancelled ctx) leave the mirror where the last
// committed batch left it, and the next Sync resumes from there.
func (s *Store) Sync(ctx context.Context, did string, src Source) (Result, error) {
	l := s.log(did)
	if l == nil {
		return Result{}, fmt.Errorf("mirroring %s: not followed", did)
	}
	l.sync.Lock()
	defer l.sync.Unlock()
	res, err := s.sync(ctx, l, src)
	s.note(l, src, res, err)
	return res, err
}

type syncer struct {
	s   *Store
	l   *mlog
	src Source
	ctx context.Context
}

func (y *syncer) refuse(reason, detail error) error {
	return &SourceError{Observer: y.l.did, Source: y.src.Name(), Reason: reason, Detail: detail}
}

// failed is err as Sync reports it: a refusal when err says the source misbehaved.
func (y *syncer) failed(what string, err error) error {
	for _, r := range []error{ErrOversized, ErrTruncated, ErrMismatch, ErrMalformed} {
		if errors.Is(err, r) {
			return y.refuse(r, fmt.Errorf("%s: %w", what, err))
		}
	}
	return fmt.Errorf("mirroring %s from %s: %s: %w", y.l.did, y.src.Name(), what, err)
}

func (s *Store) sync(ctx context.Context, l *mlog, src Source) (Result, error) {
	y := &syncer{s: s, l: l, src: src, ctx: ctx}
	res := Result{Source: src.Name()}
	m := l.snapshot()
	if m.Fork != nil {
		return res, &ForkError{Observer: l.did, Bundle: m.Fork, Detail: "its mirror holds the evidence"}
	}
	raw, err := src.Get(ctx, "checkpoint", format.MaxCheckpointBytes)
	if err != nil {
		return res, y.failed("reading the checkpoint", err)
	}
	cp, v, err := l.open(raw, m.Origin)
	if err != nil {
		return res, y.refuse(ErrSignature, err)
	}
	res.Checkpoint = cp.Size
	if cp.Size > s.cfg.MaxLeaves {
		return res, y.refuse(ErrBound, fmt.Errorf("a checkpoint of %d entries, the bound is %d", cp.Size, s.cfg.MaxLeaves))
	}
	tree := tlog.Tree{N: int64(cp.Size), Hash: cp.Root}
	hr := tlog.TileHashReader(tree, newSourceTiles(ctx, src))
	if err := y.join(m, raw, cp, v, hr); err != nil {
		return res, err
	}
	if err := y.adopt(raw, cp, v); err != nil {
		return res, err
	}
	y.retryPending()
	return y.fill(res, raw, cp, hr)
}

// open verifies a checkpoint of the log under origin, or, for a log whose origin is not
// pinned yet, under the origin its first line names.
func (l *mlog) open(raw []byte, origin string) (format.Checkpoint, note.Verifier, error) {
	if origin == "" {
		first, _, _ := strings.Cut(string(raw), "\n")
		origin = first
	}
	v, err := format.NewVerifier(origin, l.pub)
	if err != nil {
		return format.Checkpoint{}, nil, err
	}
	cp, err := format.ParseCheckpoint(raw, v)
	return cp, v, err
}

// join checks that cp can follow the mirror's target: the same tree at one size, or a
// consistency proof read from cp's hash tiles that joins the two. An older checkpoint is a
// stale source; two that cannot be one tree are a fork.
func (y *syncer) join(m meta, raw []byte, cp format.Checkpoint, v note.Verifier, hr tlog.HashReader) error {
	switch t := m.target; {
	case m.Target == nil:
		return nil
	case cp.Size < t.Size:
		if err := y.checkOlder(m, raw, cp, v); err != nil {
			return err
		}
		return y.refuse(ErrStale, fmt.Errorf("checkpoint of size %d, the mirror verified %d", cp.Size, t.Size))
	case cp.Size == t.Size:
		if cp.Root != t.Root {
			return y.fork(m.Target, raw, nil, v, fmt.Sprintf("two roots at size %d", cp.Size))
		}
		return nil
	}
	proof, err := tlog.ProveTree(int64(cp.Size), int64(m.target.Size), hr)
	if err != nil {
		return y.failed("reading the consistency proof from the hash tiles", tileFailure(err))
	}
	hashes := make([][32]byte, len(proof))
	for i, h := range proof {
		hashes[i] = h
	}
	if format.VerifyConsistency(m.target.Size, cp.Size, hashes, m.target.Root, cp.Root) != nil {
		return y.fork(m.Target, raw, hashes, v, fmt.Sprintf("size %d is no prefix of size %d", m.target.Size, cp.Size))
	}
	return nil
}

// checkOlder checks an older checkpoint against the hashes the mirror holds, when it holds
// that tree whole: another root is a fork.
func (y *syncer) checkOlder(m meta, raw []byte, cp format.Checkpoint, v note.Verifier) error {
	if m.Done == nil || m.done.Size < cp.Size || cp.Size == 0 {
		return nil
	}
	hr := &localHashes{db: y.s.db, did: y.l.did}
	root, err := tlog.TreeHash(int64(cp.Size), hr)
	if err != nil {
		return fmt.Errorf("mirroring %s: reading the tree hash at %d: %w", y.l.did, cp.Size, err)
	}
	if root == cp.Root {
		return nil
	}
	proof, err := tlog.ProveTree(int64(m.done.Size), int64(cp.Size), hr)
	if err != nil {
		return fmt.Errorf("mirroring %s: proving the tree at %d: %w", y.l.did, cp.Size, err)
	}
	hashes := make([][32]byte, len(proof))
	for i, h := range proof {
		hashes[i] = h
	}
	return y.fork(m.Done, raw, hashes, v, fmt.Sprintf("size %d is no prefix of the mirrored size %d", cp.Size, m.done.Size))
}

// fork keeps the evidence of two checkpoints that are no one tree, and stops following.
func (y *syncer) fork(a, b []byte, proof [][32]byte, v note.Verifier, detail string) error {
	e, err := format.NewEquivocation(a, b, proof, v)
	if err != nil {
		return y.refuse(ErrMismatch, fmt.Errorf("the checkpoint does not join the mirror's, but makes no evidence: %w", err))
	}
	bundle := e.Marshal()
	m := y.l.snapshot()
	m.Fork = bundle
	if err := y.s.putMeta(y.l, m, nil); err != nil {
		return err
	}
	y.s.metrics.forks.Inc()
	return &ForkError{Observer: y.l.did, Bundle: bundle, Detail: detail}
}

// adopt makes cp the mirror's target when it is newer (or the same tree with more
// cosignatures), pinning the origin.
func (y *syncer) adopt(raw []byte, cp format.Checkpoint, v note.Verifier) error {
	m := y.l.snapshot()
	if m.Target != nil && (cp.Size < m.target.Size || (cp.Size == m.target.Size && len(raw) <= len(m.Target))) {
		return nil
	}
	m.Origin, m.Target, m.target = v.Name(), raw, cp
	if m.Size == cp.Size {
		m.Done, m.done = raw, cp
	}
	return y.s.putMeta(y.l, m, nil)
}

// putMeta writes m (in b when given, else alone and synced) and installs it.
func (s *Store) putMeta(l *mlog, m meta, b *pebble.Batch) error {
	v, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("encoding mirror state: %w", err)
	}
	if b == nil {
		if err := s.guard.Apply(func() error { return s.db.Set(metaKey(l.did), v, pebble.Sync) }); err != nil {
			return fmt.Errorf("writing mirror state of %s: %w", l.did, err)
		}
	} else if err := b.Set(metaKey(l.did), v, nil); err != nil {
		return err
	}
	if b == nil {
		return l.setMeta(m)
	}
	return nil
}

// bundle is one entry bundle of a fill: its index, width and what the source served.
type bundle struct {
	n       uint64
	width   int
	entries [][]byte
	leaves  []tlog.Hash
}

func (b bundle) start() uint64 { return b.n * tileWidth }

func bundlePath(n uint64, width int) string {
	return torchwood.TilePath(tlog.Tile{H: tileHeight, L: -1, N: int64(n), W: width})
}

// fill mirrors every entry from the mirror's size up to cp, a window of bundles per
// committed batch.
func (y *syncer) fill(res Result, raw []byte, cp format.Checkpoint, hr tlog.HashReader) (Result, error) {
	for {
		m := y.l.snapshot()
		if m.Size >= cp.Size {
			return res, nil
		}
		window := y.plan(m.Size, cp.Size)
		if err := y.fetch(window); err != nil {
			return res, err
		}
		for i := range window {
			if err := y.check(&window[i], hr); err != nil {
				return res, err
			}
		}
		added, obs, err := y.s.commit(y, m, raw, cp, window)
		if err != nil {
			return res, err
		}
		res.Entries += added
		res.Observations += len(obs)
	}
}

// plan is the next window of bundles from size to the checkpoint's size.
func (y *syncer) plan(size, end uint64) []bundle {
	var out []bundle
	for n := size / tileWidth; len(out) < y.s.cfg.BundlesPerBatch && n*tileWidth < end; n++ {
		out = append(out, bundle{n: n, width: int(min(tileWidth, end-n*tileWidth))})
	}
	return out
}

// fetch reads the window's bundles from the source, Fetchers at a time.
func (y *syncer) fetch(window []bundle) error {
	errs := make([]error, len(window))
	sem := make(chan struct{}, y.s.cfg.Fetchers)
	var wg sync.WaitGroup
	for i := range window {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			b := &window[i]
			path := bundlePath(b.n, b.width)
			body, err := y.src.Get(y.ctx, path, y.s.cfg.MaxBundleBytes)
			if err != nil {
				errs[i] = y.failed("reading "+path, err)
				return
			}
			if b.entries, err = splitBundle(body, b.width); err != nil {
				errs[i] = y.failed("reading "+path, err)
				return
			}
			y.s.metrics.bytes.Add(float64(len(body)))
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// splitBundle cuts a bundle into exactly want entries, naming how it fails: fewer entries (or
// one cut short) is truncated, more is oversized.
func splitBundle(body []byte, want int) ([][]byte, error) {
	offs, err := format.BundleOffsets(body)
	switch {
	case err != nil && strings.Contains(err.Error(), "left after"):
		return nil, fmt.Errorf("%w: %v", ErrOversized, err)
	case err != nil:
		return nil, fmt.Errorf("%w: %v", ErrTruncated, err)
	case len(offs) < want:
		return nil, fmt.Errorf("%w: %d entries, want %d", ErrTruncated, len(offs), want)
	case len(offs) > want:
		return nil, fmt.Errorf("%w: %d entries, want %d", ErrOversized, len(offs), want)
	}
	out := make([][]byte, want)
	for k := range out {
		out[k] = format.BundleEntry(body, offs, k)
	}
	return out, nil
}

// check compares a bundle's entries with the signed tree: a full bundle's subtree hash with
// the tree's hash of that subtree, a partial one's leaf hashes with the tree's, each read
// through hash tiles tlog verifies against the checkpoint's root.
func (y *syncer) check(b *bundle, hr tlog.HashReader) error {
	b.leaves = make([]tlog.Hash, len(b.entries))
	for i, e := range b.entries {
		b.leaves[i] = tlog.RecordHash(e)
	}
	var idx []int64
	if b.width == tileWidth {
		idx = []int64{tlog.StoredHashIndex(tileHeight, int64(b.n))}
	} else {
		for i := range b.width {
			idx = append(idx, tlog.StoredHashIndex(0, int64(b.start())+int64(i)))
		}
	}
	want, err := hr.ReadHashes(idx)
	if err != nil {
		return y.failed(fmt.Sprintf("reading the tree's hashes of bundle %d", b.n), tileFailure(err))
	}
	path := bundlePath(b.n, b.width)
	if b.width == tileWidth {
		if subtreeHash(b.leaves) != want[0] {
			return y.refuse(ErrMismatch, fmt.Errorf("%s: its entries do not hash to the checkpoint's tree (forged or reordered)", path))
		}
		return nil
	}
	for i := range want {
		if b.leaves[i] != want[i] {
			return y.refuse(ErrMismatch, fmt.Errorf("%s: entry %d does not hash to the checkpoint's tree (forged or reordered)", path, b.start()+uint64(i)))
		}
	}
	return nil
}

// note records what a Sync did for Statuses and the metrics.
func (s *Store) note(l *mlog, src Source, res Result, err error) {
	var se *SourceError
	var fe *ForkError
	switch {
	case err == nil:
		s.metrics.syncs.WithLabelValues("ok").Inc()
	case errors.As(err, &se):
		s.metrics.refused.WithLabelValues(reasonName(se.Reason)).Inc()
		if !errors.Is(err, ErrStale) {
			s.cfg.Logger.Warn("mirror source refused", "observer", l.did, "source", src.Name(), "err", err)
		}
	case errors.As(err, &fe):
		s.metrics.syncs.WithLabelValues("forked").Inc()
	default:
		s.metrics.syncs.WithLabelValues("unavailable").Inc()
		if stopped := s.Stopped(); stopped != nil {
			s.cfg.Logger.Error("mirror store stopped after a failed write", "observer", l.did, "err", stopped)
		}
	}
	s.metrics.entries.Add(float64(res.Entries))
	l.mu.Lock()
	l.status.LastSync, l.status.LastSource = s.cfg.Now().UTC(), src.Name()
	l.status.LastError = ""
	if err != nil {
		l.status.LastError = err.Error()
	}
	l.mu.Unlock()
}

// descriptorFor returns the subject descriptor sri, from the store or else the source,
// checked against its SRI.
func (y *syncer) descriptorFor(sri string) ([]byte, error) {
	v, closer, err := y.s.db.Get(evidenceKey(sri))
	if err == nil {
		defer closer.Close()
		return append([]byte(nil), v...), nil
	}
	if !errors.Is(err, pebble.ErrNotFound) {
		return nil, err
	}
	body, err := y.src.Evidence(y.ctx, sri, DefaultMaxEvidence)
	if err != nil {
		return nil, err
	}
	if mtl.SRI(body) != sri {
		return nil, y.refuse(ErrMismatch, fmt.Errorf("evidence %s: the body has digest %s", sri, mtl.SRI(body)))
	}
	return body, nil
}
