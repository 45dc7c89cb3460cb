package federation

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/mod/sumdb/note"

	"github.com/histor-observer/histor/gossip"
	hlog "github.com/histor-observer/histor/log"
	"github.com/histor-observer/histor/log/awr"
	"github.com/histor-observer/histor/log/format"
	"github.com/histor-observer/histor/node/mirror"
	"github.com/histor-observer/histor/node/peers"
	"github.com/histor-observer/histor/witness"
	"github.com/histor-observer/histor/witness/submit"
)

// Federation is the node's place among its peers: its witness, the
// submitter that collects cosignatures of its own checkpoints, its gossip
// host, its mirrors of the peers' logs, the peer view, and the loops between
// them and the log. Each part is optional: no witnessed log, no witness; no
// witness to submit to, no submitter; no P2PListen, no gossip. The parts are
// set by their opens and cleared by their closes (Parts); the node's API reads
// them only while it is open, which is inside that span.
type Federation struct {
	cfg     Config
	logger  *slog.Logger
	metrics *fedMetrics
	// log is the node's log, set by the first part's open and cleared by its close.
	log Log

	wit atomic.Pointer[witness.Witness]  // the open witness, nil without one; a host's test may swap it
	sub atomic.Pointer[submit.Submitter] // read by gossip's goroutines
	gos atomic.Pointer[gossip.Node]      // read by the submitter's transport

	// policy is the submitter's witness policy, for the Log page; set with sub.
	policy atomic.Pointer[format.Policy]

	// ownHead is signalled (never blocking) by the log's OnHead hook; the
	// head loop reads the latest head when it wakes, so a burst of heads
	// costs one submission.
	ownHead chan struct{}
	// cosigned is signalled (never blocking) by the submitter's OnCosigned
	// hook; the head loop publishes the head again when it wakes, while the
	// submission still waits for slower witnesses.
	cosigned chan struct{}
	// peerHeads holds the newest unchecked head of each peer, by did:key;
	// guarded by mu. peerWake is signalled when it gains one.
	mu        sync.Mutex
	peerHeads map[string]*gossip.Head
	peerWake  chan struct{}
	// checked is the last head of each peer proven consistent with every
	// earlier one this node checked; written by the peer loop only,
	// guarded by cmu (the peer store's CheckHead reads it).
	cmu     sync.Mutex
	checked map[string]*gossip.Head
	// peerOrigins is the origin each peer's first checked head named: a
	// peer witnessed under one origin only, so it can neither add logs
	// without bound nor move to another's; peer loop only.
	peerOrigins map[string]string
	// forked holds the peers this node made evidence about; their later
	// heads make no more (one bundle proves the fork); peer loop only.
	forked map[string]bool
	// peers is the peer view store, set by its part.
	peers atomic.Pointer[peers.Store]
	// mirror is the mirrors of the counted observers' logs, set by its part;
	// mirrorState wakes its loop, mirrorForks (guarded by mirrorState.mu)
	// holds the observers whose fork it reported, mirrorURLs  the https URLs it may
	// also read a log from.
	mirror      atomic.Pointer[mirror.Store]
	mirrorState mirrored
	mirrorForks map[string]bool
	mirrorURLs  atomic.Pointer[map[string]string]
	// settings is the federation settings in force: Config's at first, the
	// members file's after each Reload.
	settings atomic.Pointer[Settings]
	// open is whether the parts are open; guarded by the host, which opens,
	// closes and reloads under one lock.
	open bool
	// ownPublished is the head size of the last publication of this node's
	// observation digests: later ones publish only labels at or past it.
	ownPublished atomic.Uint64
	// evidence queues bundles for the witness's store, off gossip's
	// goroutines; bounded, a full queue drops (the bundle is gossiped again
	// by every peer that holds it, and a witness makes its own).
	evidence chan evidenceJob

	// verifiers are the logs whose evidence counts, by origin: every
	// witnessed log and this node's own; guarded by vmu.
	vmu       sync.RWMutex
	verifiers map[string]note.Verifier

	cancel context.CancelFunc // ends the loops; nil while they are not running
	wg     sync.WaitGroup
}

// evidenceJob is one bundle to keep, and where it came from.
type evidenceJob struct {
	bundle []byte
	source evidenceSource
}

type evidenceSource int

const (
	// fromWitness: the witness stored it from a submission; gossip it.
	fromWitness evidenceSource = iota
	// fromHeads: made here from two heads; store it and, if new, gossip it.
	fromHeads
	// fromGossip: a peer's; store it (GossipSub forwards it already).
	fromGossip
)

const (
	evidenceQueue = 64
	// p2pWitnessHost ends the host name of a peer's witness in the
	// submitter's configuration; no resolver answers .invalid (RFC 6761).
	p2pWitnessHost = ".p2p.invalid"
)

// New makes the federation of cfg; it opens nothing (Parts do).
func New(cfg Config) *Federation {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	f := &Federation{cfg: cfg, logger: cfg.Logger, metrics: newFedMetrics(),
		ownHead: make(chan struct{}, 1), cosigned: make(chan struct{}, 1), peerHeads: map[string]*gossip.Head{}, peerWake: make(chan struct{}, 1),
		checked: map[string]*gossip.Head{}, evidence: make(chan evidenceJob, evidenceQueue),
		peerOrigins: map[string]string{}, forked: map[string]bool{},
		verifiers: map[string]note.Verifier{}, mirrorForks: map[string]bool{},
		mirrorState: mirrored{want: map[string]bool{}, wake: make(chan struct{}, 1)}}
	f.settings.Store(cfg.Settings)
	return f
}

// OnLogHead is the log's OnHead hook: it only wakes the head loop.
func (f *Federation) OnLogHead(hlog.Head) { signal(f.ownHead) }

func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

func (f *Federation) goLoop(fn func()) {
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		fn()
	}()
}

// Gossip is the gossip host; nil while it is not running.
func (f *Federation) Gossip() *gossip.Node { return f.gos.Load() }

// headLoop submits each new head of this log to the witnesses and
// publishes it on gossip: first as signed (peers need not wait for the
// witnesses), then again as cosignatures arrive (a burst costs one
// publication) and once more when the submission ends. One submission
// runs at a time, for the newest head; one that some witness could not be
// reached for is tried again, backing off from resubmitMin to resubmitMax,
// until it succeeds or a newer head replaces it.
func (f *Federation) headLoop(ctx context.Context) {
	retry := time.NewTimer(time.Hour)
	retry.Stop()
	defer retry.Stop()
	var backoff time.Duration
	for {
		select {
		case <-ctx.Done():
			return
		case <-f.ownHead:
			backoff = 0
		case <-retry.C:
		}
		head := f.log.Latest()
		f.publishHead(ctx)
		s := f.sub.Load()
		if s == nil {
			continue
		}
		if f.submitPublishing(ctx, s, head) {
			backoff = min(max(2*backoff, resubmitMin), resubmitMax)
			retry.Reset(backoff)
		} else {
			retry.Stop()
		}
		f.publishHead(ctx)
	}
}

// Bounds of the resubmission backoff.
const (
	resubmitMin = time.Second
	resubmitMax = time.Minute
)

// submitPublishing runs submit, publishing the head again each time the
// submitter adds a cosignature meanwhile, so one slow witness does not hold
// back what the others gave.
func (f *Federation) submitPublishing(ctx context.Context, s *submit.Submitter, head hlog.Head) (again bool) {
	select {
	case <-f.cosigned: // left by the last submission, already published
	default:
	}
	done := make(chan bool, 1)
	go func() { done <- f.submit(ctx, s, head) }()
	for {
		select {
		case again := <-done:
			return again
		case <-f.cosigned:
			f.publishHead(ctx)
		}
	}
}

// submit submits head and reports whether a witness was unavailable, which
// a later attempt may mend.
func (f *Federation) submit(ctx context.Context, s *submit.Submitter, head hlog.Head) (again bool) {
	res, err := s.Submit(ctx, head.Checkpoint)
	if err != nil && !errors.Is(err, submit.ErrStale) && ctx.Err() == nil {
		f.logger.Warn("submitting checkpoint to witnesses", "size", head.Size, "err", err)
	}
	if res.Witnessed {
		f.metrics.witnessed.Set(float64(res.Checkpoint.Size))
		f.logger.Debug("checkpoint witnessed", "size", res.Checkpoint.Size)
	}
	var unavailable *submit.UnavailableError
	return ctx.Err() == nil && errors.As(err, &unavailable)
}

func (f *Federation) publishHead(ctx context.Context) {
	if g := f.gos.Load(); g != nil {
		if err := g.PublishHead(ctx); err != nil && ctx.Err() == nil {
			f.logger.Warn("publishing head", "err", err)
		}
	}
}

// CosignedCheckpoint is head's checkpoint with the cosignatures collected
// for it, when the submitter's newest is that checkpoint. Signatures are
// deterministic, so the log's note is a prefix of the cosigned one exactly
// when both are of one tree.
func (f *Federation) CosignedCheckpoint(head hlog.Head) []byte {
	if s := f.sub.Load(); s != nil {
		if c := s.Latest(); bytes.HasPrefix(c, head.Checkpoint) {
			return c
		}
	}
	return head.Checkpoint
}

// addCheckpoint answers gossip's add-checkpoint protocol with the witness.
func (f *Federation) addCheckpoint(ctx context.Context, did string, req []byte) (int, []byte) {
	w := f.wit.Load()
	if w == nil {
		return http.StatusNotFound, []byte("this node witnesses no log\n")
	}
	res, _ := w.AddCheckpoint(ctx, req) // an error is logged there and is res's 500
	return res.Status, res.Body
}

// Evidence.

func (f *Federation) setVerifier(v note.Verifier) {
	f.vmu.Lock()
	defer f.vmu.Unlock()
	f.verifiers[v.Name()] = v
}

func (f *Federation) verifier(origin string) note.Verifier {
	f.vmu.RLock()
	defer f.vmu.RUnlock()
	return f.verifiers[origin]
}

// verifyEvidence is gossip's evidence validator: a bundle about a log this
// node knows the key of, whose two notes that key signed. No I/O.
func (f *Federation) verifyEvidence(bundle []byte) error {
	e, err := format.ParseEquivocation(bundle)
	if err != nil {
		return err
	}
	v := f.verifier(e.Origin)
	if v == nil {
		return fmt.Errorf("evidence about unknown log %q", e.Origin)
	}
	_, err = format.VerifyEquivocation(bundle, v)
	return err
}

// queueEvidence hands a bundle to the evidence loop without blocking.
func (f *Federation) queueEvidence(j evidenceJob) {
	select {
	case f.evidence <- j:
	default:
		f.metrics.evidence.WithLabelValues("dropped").Inc()
		f.logger.Warn("evidence queue full, dropping a bundle")
	}
}

func (f *Federation) evidenceLoop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case j := <-f.evidence:
			f.keepEvidence(ctx, j)
		}
	}
}

// keepEvidence stores a bundle with the witness and gossips what is news
// here. A bundle about a log the witness does not witness (this node's own)
// is gossiped on but not stored.
func (f *Federation) keepEvidence(ctx context.Context, j evidenceJob) {
	publish := j.source == fromWitness
	if w := f.wit.Load(); w != nil && j.source != fromWitness {
		ev, fresh, err := w.AddEvidence(j.bundle)
		switch {
		case err != nil:
			f.logger.Error("keeping equivocation evidence", "err", err)
		case fresh:
			f.metrics.evidence.WithLabelValues("kept").Inc()
			f.logger.Warn("holding equivocation evidence", "origin", ev.Origin, "kind", ev.Kind.String(), "id", ev.ID)
		}
		publish = j.source == fromHeads && (fresh || err != nil)
	} else if j.source == fromHeads {
		publish = true
	}
	if g := f.gos.Load(); g != nil && publish {
		if err := g.PublishEvidence(ctx, j.bundle); err != nil && ctx.Err() == nil {
			f.logger.Warn("publishing equivocation evidence", "err", err)
		}
	}
}

// makeEvidence turns two notes of one log that cannot be one tree into a
// bundle, kept and gossiped.
func (f *Federation) makeEvidence(a, b []byte, proof [][32]byte, v note.Verifier) {
	e, err := format.NewEquivocation(a, b, proof, v)
	if err != nil {
		f.logger.Error("making equivocation evidence", "origin", v.Name(), "err", err)
		return
	}
	f.queueEvidence(evidenceJob{e.Marshal(), fromHeads})
}

// onConflict: two verified heads of one observer, one size, two roots.
func (f *Federation) onConflict(a, b *gossip.Head) {
	v, err := headVerifier(a)
	if err != nil {
		f.logger.Error("conflicting heads", "err", err)
		return
	}
	f.makeEvidence(a.CheckpointNote, b.CheckpointNote, nil, v)
}

// headVerifier is the checkpoint verifier of a verified head's log.
func headVerifier(h *gossip.Head) (note.Verifier, error) {
	pub, err := awr.ParseDIDKey(h.STH.Log)
	if err != nil {
		return nil, err
	}
	return format.NewVerifier(h.Checkpoint.Origin, pub)
}

func mustVerifier(origin string, key ed25519.PrivateKey) note.Verifier {
	v, err := format.NewVerifier(origin, key.Public().(ed25519.PublicKey))
	if err != nil {
		panic(err) // Validate checked the origin
	}
	return v
}

// fedMetrics are the federation's own series.
type fedMetrics struct {
	witnessed    prometheus.Gauge
	evidence     *prometheus.CounterVec
	observations *prometheus.CounterVec
	reloads      *prometheus.CounterVec
	members      prometheus.Gauge
}

// newFedMetrics makes the series; the node's metrics part registers them
// with the API's (collectors) while the node is open.
func newFedMetrics() *fedMetrics {
	return &fedMetrics{
		witnessed: prometheus.NewGauge(prometheus.GaugeOpts{Name: "histor_federation_witnessed_size",
			Help: "Size of the newest checkpoint of this log whose cosignatures meet the witness policy."}),
		evidence: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "histor_federation_evidence_total",
			Help: "Equivocation bundles handled by the federation loops, by what became of them (kept, dropped)."}, []string{"result"}),
		observations: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "histor_federation_peer_observations_total",
			Help: "Peers' observation digests handled by the peer loop, by what became of them (kept, refused: read out of the mirrors; hint: a digest that woke the mirror)."}, []string{"result"}),
		reloads: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "histor_federation_member_reloads_total",
			Help: "Reloads of the members file (SIGHUP), by result (applied, refused: the file or a descriptor it names did not parse; the members stay as they were)."}, []string{"result"}),
		members: prometheus.NewGauge(prometheus.GaugeOpts{Name: "histor_federation_members",
			Help: "Observers this node counts besides itself: its peers and the allow-list, from the flags and the members file."}),
	}
}

// Collectors are the federation's own series, for the host to register while it is open:
// they count from New.
func (f *Federation) Collectors() []prometheus.Collector {
	m := f.metrics
	return []prometheus.Collector{m.witnessed, m.evidence, m.observations, m.reloads, m.members}
}

// peerHeadTimeout bounds the consistency check of one peer head.
const peerHeadTimeout = 30 * time.Second

// Witness is the open witness; nil while it is closed or when this node witnesses no log.
func (f *Federation) Witness() *witness.Witness { return f.wit.Load() }

// Mirror is the open mirror store; nil while it is closed.
func (f *Federation) Mirror() *mirror.Store { return f.mirror.Load() }

// Peers is the open peer view store; nil while it is closed.
func (f *Federation) Peers() *peers.Store { return f.peers.Load() }

// Policy is the witness policy the submitter checks this log's heads against; nil while
// no submitter runs.
func (f *Federation) Policy() *format.Policy { return f.policy.Load() }

// Submitting says whether a submitter collects cosignatures of this log's checkpoints.
func (f *Federation) Submitting() bool { return f.sub.Load() != nil }

// CheckedHeads are the peers' heads this node checked, by did:key: for each, the last
// one proven consistent with every earlier one it checked.
func (f *Federation) CheckedHeads() map[string]*gossip.Head {
	f.cmu.Lock()
	defer f.cmu.Unlock()
	return maps.Clone(f.checked)
}

// DID is this node's did:key, the peer view's own observer.
func (f *Federation) DID() string { return f.cfg.DID }

// SetWitness puts w in the witness part's place, for a host's tests that need a witness
// over a file system of their own; the witness part's close closes it.
func (f *Federation) SetWitness(w *witness.Witness) { f.wit.Store(w) }

// SetCheckedHead takes h as the last head of did proven consistent, as the peer loop
// would after checking it, for a host's tests that show a peer without running gossip.
func (f *Federation) SetCheckedHead(did string, h *gossip.Head) { f.setVerifiedHead(did, h) }
