package peers

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/cockroachdb/pebble"
	"github.com/cockroachdb/pebble/vfs"

	"github.com/histor-observer/histor/gossip/wire"
	"github.com/histor-observer/histor/internal/pebbledb"
	"github.com/histor-observer/histor/log/format"
	"github.com/histor-observer/histor/node/mirror"
)

// Bounds and defaults of Config.
const (
	DefaultMaxObserversPerServer = 64
	DefaultMaxServersPerObserver = 100_000
)

// Config is what Open needs.
type Config struct {
	// Dir is the store's Pebble directory, e.g. DataDir/peers. Empty keeps everything in
	// memory only (tests, and a node that re-learns its peers' view after each start).
	Dir string
	// FS is the filesystem Dir is on; nil means the operating system's. Tests pass one that
	// fails.
	FS vfs.FS
	// Self is this node's did:key; its own observations (Own) count like any observer's.
	Self string
	// AllowList is the did:keys of the other observers whose observations count.
	AllowList []string
	// CheckHead, when set, must accept a head (already verified under the observer's key)
	// before an observation proven under it counts; the node uses it to demand a head it
	// verified itself (e.g. consistent with the observer's latest head that gossip kept).
	// An error refuses the observation with ErrHead.
	CheckHead func(did string, sth *format.STH) error
	// MaxObserversPerServer bounds the observers kept for one server; default 64.
	MaxObserversPerServer int
	// MaxServersPerObserver bounds the servers kept for one observer; default 100,000.
	// About 4 KiB on disk and 300 bytes in memory per kept observation.
	MaxServersPerObserver int
	// Prove, when set, proves an observation the node's mirror of its observer's log holds
	// (PutMirrored): the label at leaf, with its inclusion proof under the mirror's
	// checkpoint.
	Prove func(did string, leaf uint64) (mirror.Proof, error)
	// Now stamps when an observation was accepted; default time.Now.
	Now func() time.Time
	// Logger receives the store's logs; nil discards them.
	Logger *slog.Logger
}

// Store holds each observer's latest proven observation of each server: an index in memory
// and every proof in Pebble. It is safe for concurrent use.
type Store struct {
	cfg   Config
	db    *pebble.DB
	guard pebbledb.Guard // every synced write; stopped by the first fatal one or a failed flush
	// view is every read and every commit after load: reads show only what a commit
	// acknowledged (Pebble's own show a write in flight, and one whose sync failed).
	view *pebbledb.Acked

	mu      sync.RWMutex
	allowed map[string]bool                // did → its observations count; guarded by mu
	servers map[string]map[string]*summary // server id → did → kept observation; guarded by mu
	counts  map[string]int                 // did → servers kept for it; guarded by mu
	closed  bool                           // guarded by mu
}

// summary is the in-memory part of a kept observation: what agreement and listings read.
type summary struct {
	Observer   string
	Endpoint   string
	Package    string
	Digest     string
	Status     string
	ObservedAt time.Time
	LabelID    string
	LeafIndex  uint64
	HeadSize   uint64
	// Mirrored: read out of this node's mirror of the observer's log, which proves it
	// (Config.Prove); nothing of it is stored here.
	Mirrored bool
}

// record is a kept observation as stored: everything needed to prove it again.
type record struct {
	Observation string    `json:"observation"` // the signed note
	Label       []byte    `json:"label"`
	Proof       []string  `json:"proof"` // hex
	Head        string    `json:"head"`  // histor.sth/v1 document
	AcceptedAt  time.Time `json:"acceptedAt"`
}

// Open opens (or creates) the store and loads its index.
func Open(cfg Config) (*Store, error) {
	cfg.applyDefaults()
	if cfg.Self == "" {
		return nil, errors.New("opening peer store: Self is required")
	}
	opts := &pebble.Options{Logger: pebbledb.Quiet(cfg.Logger), FS: cfg.FS}
	dir := cfg.Dir
	if dir == "" {
		opts.FS, dir = vfs.NewMem(), "peers"
	}
	s := &Store{cfg: cfg, allowed: map[string]bool{cfg.Self: true},
		servers: map[string]map[string]*summary{}, counts: map[string]int{}}
	s.guard.Watch(opts, cfg.Logger)
	db, err := pebbledb.Open(dir, opts)
	if err != nil {
		return nil, fmt.Errorf("opening peer store: %w", err)
	}
	s.db = db
	for _, did := range cfg.AllowList {
		s.allowed[did] = true
	}
	if err := s.load(); err != nil {
		return nil, errors.Join(err, db.Close())
	}
	s.view = pebbledb.NewAcked(db, &s.guard)
	return s, nil
}

func (c *Config) applyDefaults() {
	if c.MaxObserversPerServer <= 0 {
		c.MaxObserversPerServer = DefaultMaxObserversPerServer
	}
	if c.MaxServersPerObserver <= 0 {
		c.MaxServersPerObserver = DefaultMaxServersPerObserver
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
}

// Close closes the store once the writes under way are done; later calls of the store
// answer ErrClosed (Agreement and the listings, read from memory, go on).
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	if err := s.view.Close(); err != nil {
		return fmt.Errorf("closing peer store: %w", err)
	}
	return nil
}

func recordKey(server, did string) []byte { return []byte("e/" + server + "/" + did) }

// load rebuilds the index from the stored records of the allowed observers (one off the
// list may have records left by a deletion that failed, or by a list changed between two
// starts). They were verified when accepted, so only their text is parsed again; a record
// that no longer parses is skipped and logged.
func (s *Store) load() error {
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: []byte("e/"), UpperBound: []byte("e0")})
	if err != nil {
		return fmt.Errorf("loading peer store: %w", err)
	}
	defer it.Close()
	for it.First(); it.Valid(); it.Next() {
		sum, err := parseRecord(it.Value())
		if err != nil {
			s.cfg.Logger.Warn("skipping an unreadable peer observation", "key", string(it.Key()), "err", err)
			continue
		}
		if s.allowed[sum.s.Observer] {
			s.keep(sum.server, sum.s)
		}
	}
	return it.Error()
}

type keyed struct {
	server string
	s      *summary
}

func parseRecord(v []byte) (keyed, error) {
	var r record
	if err := json.Unmarshal(v, &r); err != nil {
		return keyed{}, err
	}
	o, err := wire.ParseObservationText([]byte(r.Observation))
	if err != nil {
		return keyed{}, err
	}
	sth, err := format.ParseSTH([]byte(r.Head))
	if err != nil {
		return keyed{}, err
	}
	return keyed{o.Server, summarize(o, sth.TreeSize)}, nil
}

func summarize(o *wire.Observation, headSize uint64) *summary {
	return &summary{Observer: o.Observer, Endpoint: o.Endpoint, Package: o.Package, Digest: o.Digest,
		Status: o.Status, ObservedAt: o.ObservedAt, LabelID: o.LabelID, LeafIndex: o.LeafIndex, HeadSize: headSize}
}

// keep puts sum in the index; the caller holds mu (or is load, before sharing s).
func (s *Store) keep(server string, sum *summary) {
	byDID := s.servers[server]
	if byDID == nil {
		byDID = map[string]*summary{}
		s.servers[server] = byDID
	}
	if byDID[sum.Observer] == nil {
		s.counts[sum.Observer]++
	}
	byDID[sum.Observer] = sum
}

// Add verifies p and keeps it as its observer's latest observation of its server. It
// returns nil without writing when p is what the store already keeps; a refusal is a
// *RefusedError.
func (s *Store) Add(p Proven) error {
	c, err := verify(p, s.isAllowed)
	if err != nil {
		return err
	}
	o := c.obs
	refuse := func(reason, detail error) error {
		return &RefusedError{Observer: o.Observer, Server: o.Server, Reason: reason, Detail: detail}
	}
	if s.cfg.CheckHead != nil {
		if err := s.cfg.CheckHead(o.Observer, c.sth); err != nil {
			return refuse(ErrHead, err)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	sum := summarize(o, c.sth.TreeSize)
	old := s.servers[o.Server][o.Observer]
	switch replace, err := supersedes(sum, old); {
	case err != nil:
		return refuse(err, nil)
	case !replace:
		return nil
	}
	if err := s.checkBounds(o.Server, o.Observer, old); err != nil {
		return refuse(err, nil)
	}
	// A write that failed leaves the index and the reads (s.view) on the observation kept
	// before: a stopped store shows what it acknowledged.
	if err := s.write(o, p); err != nil {
		return err
	}
	s.keep(o.Server, sum)
	return nil
}

// supersedes says whether next replaces kept, the same observer's kept observation of the
// server (nil: none). A status never displaces a digest (an unreachable moment does not
// undo what was seen: it is accepted and not kept); otherwise the later label in the
// observer's log wins, and at the same label a larger head refreshes the proof, or a later
// attempt its status. An earlier label is stale.
func supersedes(next, kept *summary) (bool, error) {
	switch {
	case kept == nil:
		return true, nil
	case next.LabelID == kept.LabelID && next.Digest == kept.Digest && next.Status == kept.Status:
		return next.HeadSize > kept.HeadSize && !kept.Mirrored, nil
	case next.Digest == "" && kept.Digest != "":
		return false, nil
	case next.Digest != "" && kept.Digest == "":
		return true, nil
	case next.LeafIndex > kept.LeafIndex:
		return true, nil
	case next.LeafIndex == kept.LeafIndex && next.ObservedAt.After(kept.ObservedAt):
		return true, nil
	}
	return false, ErrStale
}

// PutMirrored keeps o, read out of this node's verified mirror of its observer's log, as
// that observer's observation of its server when it is later in the log than the one kept
// (the mirror is the proof; the observer must be allowed). It stores nothing: the mirror
// holds it, and gives it again at every start. It is kept even when dropping the stored
// observation it replaces fails (the error says so): the mirror proves it.
func (s *Store) PutMirrored(o mirror.Observation) error {
	sum := &summary{Observer: o.Observer, Endpoint: o.Endpoint, Package: o.Package, Digest: o.Digest, Status: o.Status,
		ObservedAt: o.ObservedAt, LabelID: o.LabelID, LeafIndex: o.LeafIndex, Mirrored: true}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	if !s.allowed[o.Observer] || o.Observer == s.cfg.Self {
		return &RefusedError{Observer: o.Observer, Server: o.Server, Reason: ErrUnknownObserver}
	}
	old := s.servers[o.Server][o.Observer]
	if old != nil && old.LeafIndex > o.LeafIndex {
		return nil
	}
	if err := s.checkBounds(o.Server, o.Observer, old); err != nil {
		return &RefusedError{Observer: o.Observer, Server: o.Server, Reason: err}
	}
	var err error
	if old != nil && !old.Mirrored {
		err = s.view.Write(func(b *pebble.Batch) error { return b.Delete(recordKey(o.Server, o.Observer), nil) })
	}
	s.keep(o.Server, sum)
	if err != nil {
		return fmt.Errorf("dropping a peer observation the mirror replaces: %w", err)
	}
	return nil
}

func (s *Store) isAllowed(did string) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.allowed[did]
}

// SetAllowList replaces the other observers whose observations count, as Config.AllowList.
// The observations of an observer that left the list leave the view, and its stored ones
// are deleted; this node's own always count. The view follows list even when deleting
// fails (the error says so): the list counts at once, as it will after a reopen, which
// does not count the observations of an observer off the list.
func (s *Store) SetAllowList(list []string) error {
	allowed := map[string]bool{s.cfg.Self: true}
	for _, did := range list {
		allowed[did] = true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	b := s.db.NewBatch()
	defer b.Close()
	type gone struct{ server, did string }
	var drop []gone
	for server, byDID := range s.servers {
		for did, sum := range byDID {
			if allowed[did] {
				continue
			}
			drop = append(drop, gone{server, did})
			if !sum.Mirrored {
				if err := b.Delete(recordKey(server, did), nil); err != nil {
					return fmt.Errorf("setting the allow-list: %w", err)
				}
			}
		}
	}
	err := s.view.Commit(b)
	for _, g := range drop {
		s.forget(g.server, g.did)
	}
	s.allowed = allowed
	if err != nil {
		return fmt.Errorf("setting the allow-list: dropping observations: %w", err)
	}
	return nil
}

// forget drops the kept observation of server by did from the index; the caller holds mu.
func (s *Store) forget(server, did string) {
	if s.servers[server][did] == nil {
		return
	}
	delete(s.servers[server], did)
	if len(s.servers[server]) == 0 {
		delete(s.servers, server)
	}
	if s.counts[did]--; s.counts[did] <= 0 {
		delete(s.counts, did)
	}
}

func (s *Store) checkBounds(server, did string, old *summary) error {
	if old != nil {
		return nil
	}
	if len(s.servers[server]) >= s.cfg.MaxObserversPerServer {
		return fmt.Errorf("%w: %d observers of server %s", ErrFull, s.cfg.MaxObserversPerServer, server)
	}
	if s.counts[did] >= s.cfg.MaxServersPerObserver {
		return fmt.Errorf("%w: %d servers observed by %s", ErrFull, s.cfg.MaxServersPerObserver, did)
	}
	return nil
}

func (s *Store) write(o *wire.Observation, p Proven) error {
	r := record{Observation: string(p.Observation), Label: p.Label, Head: string(p.Head), AcceptedAt: s.cfg.Now().UTC()}
	for _, h := range p.Proof {
		r.Proof = append(r.Proof, hex.EncodeToString(h[:]))
	}
	v, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("encoding peer observation: %w", err)
	}
	if err := s.view.Write(func(b *pebble.Batch) error { return b.Set(recordKey(o.Server, o.Observer), v, nil) }); err != nil {
		return fmt.Errorf("writing peer observation: %w", err)
	}
	return nil
}

// kept returns copies of the kept observations of server, sorted by observer.
func (s *Store) kept(server string) []summary {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.keptLocked(server)
}

// keptLocked is kept for a caller that holds mu.
func (s *Store) keptLocked(server string) []summary {
	out := make([]summary, 0, len(s.servers[server]))
	for _, sum := range s.servers[server] {
		out = append(out, *sum)
	}
	slices.SortFunc(out, func(a, b summary) int { return strings.Compare(a.Observer, b.Observer) })
	return out
}

// Stopped is the failed write that stopped the peer store's writes (Pebble's commit pipeline
// cannot go on after one), nil while it takes them. Reads go on; reopening clears it.
func (s *Store) Stopped() error { return s.guard.Stopped() }

// PebbleMemory is what the store's Pebble holds outside the Go heap when built with cgo: its
// block cache's bytes and its live WAL's (pebbledb.Acked.Memory).
func (s *Store) PebbleMemory() pebbledb.Mem { return s.view.Memory() }
