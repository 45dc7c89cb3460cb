package federation

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"filippo.io/torchwood"

	"github.com/histor-observer/histor/gossip"
	hlog "github.com/histor-observer/histor/log"
	"github.com/histor-observer/histor/node/mirror"
)

// The mirror: this node's verified copy of every other observer's log it counts, the
// source of the peer view. Gossip heads and observation digests only wake it; a poll every
// MirrorPoll covers whatever gossip lost, so a node that was stopped, partitioned or
// restarted converges from the next checkpoint it can read, from the observer or from any
// peer that mirrors it.

// DefaultMirrorPoll is Config.MirrorPoll's default.
const DefaultMirrorPoll = 5 * time.Second

// mirrorSyncTimeout bounds one sync of one observer from one source.
const mirrorSyncTimeout = 10 * time.Minute

// MirrorDir is where the mirrors of the peers' logs live: Dir/mirror.
func (f *Federation) MirrorDir() string { return filepath.Join(f.cfg.Dir, "mirror") }

// mirrored is the federation's mirror state, beside the federation's other fields.
type mirrored struct {
	mu   sync.Mutex
	want map[string]bool // observers to sync at the next wake; guarded by mu
	wake chan struct{}
}

func (f *Federation) openMirror(context.Context) error {
	m, err := mirror.Open(mirror.Config{
		Dir: f.MirrorDir(), MaxLeaves: f.cfg.MirrorMaxLeaves, MaxBundleBytes: f.cfg.MirrorMaxBundleBytes,
		OnObservation: f.onMirrored, Logger: f.cfg.Logger, Registerer: f.cfg.Registerer, Now: f.cfg.Now,
	})
	if err != nil {
		return err
	}
	fed := f.settings.Load()
	if err := f.follow(m, fed); err != nil {
		m.Close()
		return err
	}
	f.setMirrorURLs(fed, f.cfg.MirrorURLs)
	f.mirror.Store(m)
	return nil
}

// follow makes m follow every observer fed counts.
func (f *Federation) follow(m *mirror.Store, fed *Settings) error {
	for _, did := range f.counted(fed) {
		if err := m.Follow(did, f.originOf(fed, did)); err != nil {
			return err
		}
	}
	return nil
}

// mirrorURL is the https URL did's log may also be read from, "" for none.
func (f *Federation) mirrorURL(did string) string {
	if urls := f.mirrorURLs.Load(); urls != nil {
		return (*urls)[did]
	}
	return ""
}

// setMirrorURLs keeps the https URL of each descriptor peer of fed, when on.
func (f *Federation) setMirrorURLs(fed *Settings, on bool) {
	urls := map[string]string{}
	if fed != nil && on {
		for _, p := range fed.peers {
			if p.desc != nil && strings.HasPrefix(p.desc.URL, "https://") {
				urls[p.did] = strings.TrimSuffix(p.desc.URL, "/")
			}
		}
	}
	f.mirrorURLs.Store(&urls)
}

func (f *Federation) closeMirror() error {
	m := f.mirror.Swap(nil)
	if m == nil {
		return nil
	}
	return m.Close()
}

// counted is every observer whose observations this node counts but itself.
func (f *Federation) counted(fed *Settings) []string {
	if fed == nil {
		return nil
	}
	return slices.DeleteFunc(slices.Clone(fed.allow), func(did string) bool { return did == f.cfg.DID })
}

// originOf is the origin a descriptor peer names, "" when the node knows none yet.
func (f *Federation) originOf(fed *Settings, did string) string {
	for _, p := range fed.peers {
		if p.did == did && p.desc != nil {
			return p.desc.Origin
		}
	}
	return ""
}

// loadMirrored gives the peer view every observation the mirrors hold of the observers
// in dids that this node counts: all of them at start, those that joined at a reload.
func (f *Federation) loadMirrored(dids []string) error {
	m, view := f.mirror.Load(), f.peers.Load()
	if m == nil || view == nil {
		return nil
	}
	counted := f.counted(f.settings.Load())
	for _, did := range dids {
		if !slices.Contains(counted, did) {
			continue // a former member: its mirror stays on disk, out of the view
		}
		if err := m.EachObservation(did, f.onMirrored); err != nil {
			return err
		}
	}
	return nil
}

// onMirrored is the mirror's OnObservation: the observation enters the peer view.
func (f *Federation) onMirrored(o mirror.Observation) {
	view := f.peers.Load()
	if view == nil {
		return
	}
	if err := view.PutMirrored(o); err != nil {
		f.metrics.observations.WithLabelValues("refused").Inc()
		f.logger.Warn("mirrored observation not kept", "observer", o.Observer, "server", o.Server, "err", err)
		return
	}
	f.metrics.observations.WithLabelValues("kept").Inc()
}

// wantMirror asks the mirror loop to sync did soon, never blocking.
func (f *Federation) wantMirror(did string) {
	f.mirrorState.mu.Lock()
	f.mirrorState.want[did] = true
	f.mirrorState.mu.Unlock()
	signal(f.mirrorState.wake)
}

// mirrorBehind says whether did's log holds more than the mirror has.
func (f *Federation) mirrorBehind(did string, size uint64) bool {
	m := f.mirror.Load()
	return m != nil && size > m.Size(did)
}

// mirrorLoop syncs the observers gossip announced, and every observer each MirrorPoll.
func (f *Federation) mirrorLoop(ctx context.Context, poll time.Duration) {
	tick := time.NewTicker(poll)
	defer tick.Stop()
	all := true // at start
	for {
		f.mirrorState.mu.Lock()
		if all {
			for _, did := range f.counted(f.settings.Load()) {
				f.mirrorState.want[did] = true
			}
		}
		want := f.mirrorState.want
		f.mirrorState.want = map[string]bool{}
		f.mirrorState.mu.Unlock()
		dids := make([]string, 0, len(want))
		for did := range want {
			dids = append(dids, did)
		}
		slices.Sort(dids)
		for _, did := range dids {
			if ctx.Err() != nil {
				return
			}
			f.syncMirror(ctx, did)
		}
		all = false
		select {
		case <-ctx.Done():
			return
		case <-f.mirrorState.wake:
		case <-tick.C:
			all = true
		}
	}
}

// syncMirror brings the mirror of did up to the newest checkpoint a source gives: the
// observer itself, then each peer that mirrors it, then (MirrorURLs) its public URL. It
// stops at the first source that brings it to the newest head gossip announced.
func (f *Federation) syncMirror(ctx context.Context, did string) {
	m, g := f.mirror.Load(), f.gos.Load()
	if m == nil {
		return
	}
	want := uint64(0)
	if g != nil {
		if h := g.Heads()[did]; h != nil {
			want = h.STH.TreeSize
		}
	}
	for _, src := range f.mirrorSources(g, did) {
		sctx, cancel := context.WithTimeout(ctx, mirrorSyncTimeout)
		_, err := m.Sync(sctx, did, src)
		cancel()
		var fe *mirror.ForkError
		if errors.As(err, &fe) {
			f.keepMirrorFork(did, fe)
			return
		}
		if err != nil && ctx.Err() == nil && !errors.Is(err, mirror.ErrStale) {
			f.logger.Debug("mirror sync", "observer", did, "source", src.Name(), "err", err)
		}
		if err == nil && m.Size(did) >= want {
			return
		}
	}
}

// keepMirrorFork keeps and gossips the evidence of a fork the mirror found, once.
func (f *Federation) keepMirrorFork(did string, fe *mirror.ForkError) {
	f.mirrorState.mu.Lock()
	seen := f.mirrorForks[did]
	f.mirrorForks[did] = true
	f.mirrorState.mu.Unlock()
	if seen {
		return
	}
	f.logger.Warn("a mirrored log forked", "observer", did, "detail", fe.Detail)
	f.queueEvidence(evidenceJob{fe.Bundle, fromHeads})
}

// mirrorSources are where did's log can be read from, in the order they are tried.
func (f *Federation) mirrorSources(g *gossip.Node, did string) []mirror.Source {
	var out []mirror.Source
	if g != nil {
		out = append(out, &p2pSource{g: g, peer: did, prefix: "log/"})
		for _, p := range g.Connected() {
			if p != did {
				out = append(out, &p2pSource{g: g, peer: p, prefix: "mirror/" + did + "/"})
			}
		}
	}
	if url := f.mirrorURL(did); url != "" {
		out = append(out, &mirror.HTTPSource{LogURL: url + "/log/", EvidenceURL: url + "/api/v1/descriptors/",
			Client: &http.Client{Timeout: time.Minute, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}})
	}
	return out
}

// p2pSource reads a log through a peer's fetch protocol: its own log (prefix "log/") or
// its mirror of another's ("mirror/<did>/").
type p2pSource struct {
	g      *gossip.Node
	peer   string
	prefix string
}

func (s *p2pSource) Name() string { return "p2p " + s.peer + " " + s.prefix }

func (s *p2pSource) Get(ctx context.Context, path string, max int) ([]byte, error) {
	return s.fetch(ctx, s.prefix+path, max)
}

func (s *p2pSource) Evidence(ctx context.Context, sri string, max int) ([]byte, error) {
	return s.fetch(ctx, "evidence/"+sri, max)
}

func (s *p2pSource) fetch(ctx context.Context, path string, max int) ([]byte, error) {
	b, err := s.g.Fetch(ctx, s.peer, path, max+1)
	var se *gossip.StatusError
	switch {
	case errors.As(err, &se) && se.Status == http.StatusNotFound:
		return nil, fmt.Errorf("%s: %w", path, mirror.ErrNotFound)
	case err != nil:
		return nil, err
	case len(b) > max:
		return nil, fmt.Errorf("%s: %w: more than %d bytes", path, mirror.ErrOversized, max)
	}
	return b, nil
}

// fetch is gossip's Fetch: what a peer's mirror reads of this node, the same bytes as the
// HTTP routes: this log's checkpoint and tiles, the mirrors this node keeps, and
// descriptors.
func (f *Federation) fetch(lg Log, path string) (int, []byte) {
	body, err := f.read(lg, path)
	switch {
	case err == nil:
		return http.StatusOK, body
	case errors.Is(err, mirror.ErrNotFound), errors.Is(err, hlog.ErrNotFound):
		return http.StatusNotFound, []byte("not found")
	case errors.Is(err, mirror.ErrMalformed), errors.Is(err, errFetchPath):
		return http.StatusBadRequest, []byte(err.Error())
	}
	f.logger.Warn("serving a fetch", "path", path, "err", err)
	return http.StatusInternalServerError, []byte("reading failed")
}

var errFetchPath = errors.New("no such path")

func (f *Federation) read(lg Log, path string) ([]byte, error) {
	m := f.mirror.Load()
	switch {
	case path == "log/checkpoint":
		if lg == nil || lg.Latest().Size == 0 {
			return nil, mirror.ErrNotFound
		}
		return f.CosignedCheckpoint(lg.Latest()), nil
	case strings.HasPrefix(path, "log/tile/"):
		if lg == nil {
			return nil, mirror.ErrNotFound
		}
		return readLogTile(lg, strings.TrimPrefix(path, "log/"))
	case strings.HasPrefix(path, "evidence/"):
		sri := strings.TrimPrefix(path, "evidence/")
		if lg != nil {
			if b, err := lg.Evidence(hlog.EvidenceDescriptors, sri); err == nil {
				return b, nil
			}
		}
		if m == nil {
			return nil, mirror.ErrNotFound
		}
		return m.Evidence(sri)
	case strings.HasPrefix(path, "mirror/"):
		did, rest, _ := strings.Cut(strings.TrimPrefix(path, "mirror/"), "/")
		if m == nil {
			return nil, mirror.ErrNotFound
		}
		return readMirror(m, did, rest)
	}
	return nil, fmt.Errorf("%w: %q", errFetchPath, path)
}

// readLogTile reads a tlog-tiles path ("tile/…") of this node's log.
func readLogTile(lg Log, path string) ([]byte, error) {
	t, err := torchwood.ParseTilePath(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", mirror.ErrMalformed, err)
	}
	if t.L == -1 {
		return lg.EntryBundle(uint64(t.N), t.W)
	}
	return lg.HashTile(uint64(t.L), uint64(t.N), t.W)
}

// readMirror reads "checkpoint" or a tile path of the mirror of did.
func readMirror(m *mirror.Store, did, rest string) ([]byte, error) {
	if rest == "checkpoint" {
		if c := m.Checkpoint(did); c != nil {
			return c, nil
		}
		return nil, mirror.ErrNotFound
	}
	return m.Tile(did, rest)
}
