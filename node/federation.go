package node

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/mod/sumdb/note"

	"github.com/histor-observer/histor/gossip"
	hlog "github.com/histor-observer/histor/log"
	"github.com/histor-observer/histor/log/awr"
	"github.com/histor-observer/histor/log/format"
	"github.com/histor-observer/histor/log/keys"
	"github.com/histor-observer/histor/node/mirror"
	"github.com/histor-observer/histor/node/peers"
	"github.com/histor-observer/histor/witness"
	"github.com/histor-observer/histor/witness/submit"
)

// federation is the node's place among its peers: its witness, the
// submitter that collects cosignatures of its own checkpoints, its gossip
// host, and the loops between them and the log. Each part is optional: no
// witnessed log, no witness; no witness to submit to, no submitter; no
// P2PListen, no gossip. The parts are set by their opens and cleared by
// their closes (parts.go); the api reads them only while it is open, which
// is inside that span.
type federation struct {
	logger     *slog.Logger
	witnessKey ed25519.PrivateKey
	p2pKey     ed25519.PrivateKey
	metrics    *fedMetrics

	wit *witness.Witness
	sub atomic.Pointer[submit.Submitter] // read by gossip's goroutines
	gos atomic.Pointer[gossip.Node]      // read by the submitter's transport
	log *hlog.Log

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
	// settings is the federation settings in force: Config's at open, the
	// members file's after each ReloadMembers.
	settings atomic.Pointer[fedSettings]
	// ownPublished is the head size of the last publication of this node's
	// observation digests: later ones publish only labels at or past it.
	ownPublished atomic.Uint64
	// self is this node's did:key; set by the peers part before anything
	// reads it.
	self string
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

func newFederation(seed *keys.Seed, logger *slog.Logger) *federation {
	return &federation{logger: logger, witnessKey: seed.WitnessKey(), p2pKey: seed.P2PKey(), metrics: newFedMetrics(),
		ownHead: make(chan struct{}, 1), cosigned: make(chan struct{}, 1), peerHeads: map[string]*gossip.Head{}, peerWake: make(chan struct{}, 1),
		checked: map[string]*gossip.Head{}, evidence: make(chan evidenceJob, evidenceQueue),
		peerOrigins: map[string]string{}, forked: map[string]bool{},
		verifiers: map[string]note.Verifier{}, mirrorForks: map[string]bool{},
		mirrorState: mirrored{want: map[string]bool{}, wake: make(chan struct{}, 1)}}
}

// onLogHead is the log's OnHead hook: it only wakes the head loop.
func (f *federation) onLogHead(hlog.Head) { signal(f.ownHead) }

func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// Parts.

// openWitness opens the witness when there is a log to witness. It also
// witnesses this node's own log, so that evidence of a fork of it (a key
// used elsewhere, a data directory restored from an old copy) is kept and
// served here too; a witness's cosignature of its own log counts for
// nothing, and the default policy leaves it out.
func (n *Node) openWitness(context.Context) error {
	fed := n.cfg.fed
	f := n.fed
	own := mustVerifier(n.cfg.LogOrigin, n.id.logKey)
	f.setVerifier(own)
	if len(fed.logs) == 0 && len(fed.peers) == 0 && n.cfg.MembersFile == "" {
		return nil // nothing to witness, nor a members file that may name some
	}
	logs := maps.Clone(fed.logs)
	if have, ok := logs[own.Name()]; ok && have.KeyHash() != own.KeyHash() {
		return fmt.Errorf("WitnessLogs names this node's origin %q with another key", own.Name())
	}
	logs[own.Name()] = own
	w, err := witness.New(witness.Config{
		Dir: n.WitnessDir(), Name: n.cfg.WitnessName, Key: f.witnessKey, Logs: logs,
		Clock: n.now, Logger: n.cfg.Logger, Registerer: n.cfg.registerer(),
		OnEvidence: func(e witness.Evidence) { f.queueEvidence(evidenceJob{e.Bundle, fromWitness}) },
	})
	if err != nil {
		return err
	}
	for _, v := range fed.logs {
		f.setVerifier(v)
	}
	f.wit = w
	return nil
}

func (n *Node) closeWitness() error {
	w := n.fed.wit
	n.fed.wit = nil
	if w == nil {
		return nil
	}
	return w.Close()
}

// openSubmitter makes the submitter of this log's checkpoints: to every
// configured witness over HTTP, and to every descriptor peer's witness over
// gossip (through submitTransport).
func (n *Node) openSubmitter(context.Context) error {
	s, policy, err := n.newSubmitter(n.cfg.fed)
	if err != nil || s == nil {
		return err
	}
	n.fed.policy.Store(policy)
	n.fed.sub.Store(s)
	return nil
}

// newSubmitter makes the submitter to fed's witnesses; nil when there are none.
func (n *Node) newSubmitter(fed *fedSettings) (*submit.Submitter, *format.Policy, error) {
	targets, p2p := n.witnessTargets(fed)
	if len(targets) == 0 {
		return nil, nil, nil
	}
	policy, err := n.witnessPolicy(fed, targets)
	if err != nil {
		return nil, nil, err
	}
	s, err := submit.New(submit.Config{
		Origin: n.cfg.LogOrigin, Key: n.id.logKey.Public().(ed25519.PublicKey), Witnesses: targets,
		Proof: n.log.ConsistencyProof, Policy: policy, Logger: n.cfg.Logger, Registerer: n.cfg.registerer(),
		OnCosigned: func() { signal(n.fed.cosigned) },
		Client: &http.Client{Transport: newSubmitTransport(p2p, n.fed.gossipNode),
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }},
	})
	if err != nil {
		return nil, nil, err
	}
	return s, policy, nil
}

func (n *Node) closeSubmitter() error {
	s := n.fed.sub.Swap(nil)
	if s == nil {
		return nil
	}
	return s.Close()
}

// witnessTargets are Config.Witnesses and then each descriptor peer's
// witness, reached through a host name no resolver answers (RFC 6761
// .invalid) that submitTransport routes to the peer over gossip.
func (n *Node) witnessTargets(fed *fedSettings) ([]submit.Witness, map[string]string) {
	targets := append([]submit.Witness(nil), fed.witnesses...)
	p2p := map[string]string{}
	for i, p := range fed.peers {
		if p.desc == nil || len(n.cfg.P2PListen) == 0 {
			continue
		}
		host := fmt.Sprintf("peer-%d%s", i, p2pWitnessHost)
		p2p[host] = p.did
		targets = append(targets, submit.Witness{URL: "http://" + host, Cosigner: p.desc.Witness})
	}
	return targets, p2p
}

// witnessPolicy is WitnessPolicy's, or by default this log, every target,
// and a quorum of any one of them.
func (n *Node) witnessPolicy(fed *fedSettings, targets []submit.Witness) (*format.Policy, error) {
	if fed.policy != nil {
		return fed.policy, nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "log %s\n", n.id.logVkey)
	var names []string
	for i, t := range targets {
		vkey, err := keys.CosignatureVerifierKey(t.Cosigner.Name, t.Cosigner.Key)
		if err != nil {
			return nil, err
		}
		names = append(names, fmt.Sprintf("w%d", i))
		fmt.Fprintf(&b, "witness w%d %s\n", i, vkey)
	}
	fmt.Fprintf(&b, "group any-witness any %s\nquorum any-witness\n", strings.Join(names, " "))
	p, err := format.ParsePolicy([]byte(b.String()))
	if err != nil {
		return nil, fmt.Errorf("making the default witness policy: %w", err)
	}
	return p, nil
}

func (n *Node) openGossip(ctx context.Context) error {
	fed := n.cfg.fed
	if len(n.cfg.P2PListen) == 0 {
		return nil
	}
	desc, err := n.writeDescriptor()
	if err != nil {
		return err
	}
	f, lg := n.fed, n.log
	var peers []gossip.Peer
	for _, p := range fed.peers {
		peers = append(peers, p.gp)
	}
	g, err := gossip.New(gossip.Config{
		Identity: f.p2pKey, Descriptor: desc, Listen: n.cfg.P2PListen, Peers: peers, AllowList: fed.allow,
		Log: gossipLog{log: n.log, f: f}, AddCheckpoint: f.addCheckpoint, VerifyEvidence: f.verifyEvidence,
		Fetch:  func(_ context.Context, _, path string) (int, []byte) { return f.fetch(lg, path) },
		OnHead: f.onPeerHead, OnObservation: f.onObservation, OnEvidence: func(b []byte) { f.queueEvidence(evidenceJob{b, fromGossip}) },
		OnConflict: f.onConflict, Logger: n.cfg.Logger, Registerer: n.cfg.registerer(),
		Heartbeat: n.cfg.GossipHeartbeat, Now: n.cfg.Now,
	})
	if err != nil {
		return err
	}
	if err := g.Start(ctx); err != nil {
		g.Close()
		return err
	}
	f.gos.Store(g)
	n.cfg.Logger.Info("gossip host up", "addrs", g.Addrs(), "descriptor", n.DescriptorPath())
	return nil
}

func (n *Node) closeGossip() error {
	g := n.fed.gos.Swap(nil)
	if g == nil {
		return nil
	}
	return g.Close()
}

// openFederation starts the loops: this log's heads to the witnesses and
// to gossip, peers' heads checked for consistency, evidence kept.
func (n *Node) openFederation(context.Context) error {
	f := n.fed
	f.log = n.log
	ctx, cancel := context.WithCancel(context.Background())
	f.cancel = cancel
	f.goLoop(func() { f.headLoop(ctx) })
	f.goLoop(func() { f.peerLoop(ctx) })
	f.goLoop(func() { f.evidenceLoop(ctx) })
	f.goLoop(func() { f.mirrorLoop(ctx, n.cfg.MirrorPoll) })
	f.metrics.members.Set(float64(len(f.counted(n.cfg.fed))))
	signal(f.ownHead) // the head the log opened with
	return nil
}

func (n *Node) closeFederation() error {
	f := n.fed
	f.cancel()
	f.wg.Wait()
	f.cancel, f.log = nil, nil
	return nil
}

func (f *federation) goLoop(fn func()) {
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		fn()
	}()
}

func (f *federation) gossipNode() *gossip.Node { return f.gos.Load() }

// headLoop submits each new head of this log to the witnesses and
// publishes it on gossip: first as signed (peers need not wait for the
// witnesses), then again as cosignatures arrive (a burst costs one
// publication) and once more when the submission ends. One submission
// runs at a time, for the newest head; one that some witness could not be
// reached for is tried again, backing off from resubmitMin to resubmitMax,
// until it succeeds or a newer head replaces it.
func (f *federation) headLoop(ctx context.Context) {
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
func (f *federation) submitPublishing(ctx context.Context, s *submit.Submitter, head hlog.Head) (again bool) {
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
func (f *federation) submit(ctx context.Context, s *submit.Submitter, head hlog.Head) (again bool) {
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

func (f *federation) publishHead(ctx context.Context) {
	if g := f.gos.Load(); g != nil {
		if err := g.PublishHead(ctx); err != nil && ctx.Err() == nil {
			f.logger.Warn("publishing head", "err", err)
		}
	}
}

// cosignedCheckpoint is head's checkpoint with the cosignatures collected
// for it, when the submitter's newest is that checkpoint. Signatures are
// deterministic, so the log's note is a prefix of the cosigned one exactly
// when both are of one tree.
func (f *federation) cosignedCheckpoint(head hlog.Head) []byte {
	if s := f.sub.Load(); s != nil {
		if c := s.Latest(); bytes.HasPrefix(c, head.Checkpoint) {
			return c
		}
	}
	return head.Checkpoint
}

// addCheckpoint answers gossip's add-checkpoint protocol with the witness.
func (f *federation) addCheckpoint(ctx context.Context, did string, req []byte) (int, []byte) {
	w := f.wit
	if w == nil {
		return http.StatusNotFound, []byte("this node witnesses no log\n")
	}
	res, _ := w.AddCheckpoint(ctx, req) // an error is logged there and is res's 500
	return res.Status, res.Body
}

// Evidence.

func (f *federation) setVerifier(v note.Verifier) {
	f.vmu.Lock()
	defer f.vmu.Unlock()
	f.verifiers[v.Name()] = v
}

func (f *federation) verifier(origin string) note.Verifier {
	f.vmu.RLock()
	defer f.vmu.RUnlock()
	return f.verifiers[origin]
}

// verifyEvidence is gossip's evidence validator: a bundle about a log this
// node knows the key of, whose two notes that key signed. No I/O.
func (f *federation) verifyEvidence(bundle []byte) error {
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
func (f *federation) queueEvidence(j evidenceJob) {
	select {
	case f.evidence <- j:
	default:
		f.metrics.evidence.WithLabelValues("dropped").Inc()
		f.logger.Warn("evidence queue full, dropping a bundle")
	}
}

func (f *federation) evidenceLoop(ctx context.Context) {
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
func (f *federation) keepEvidence(ctx context.Context, j evidenceJob) {
	publish := j.source == fromWitness
	if w := f.wit; w != nil && j.source != fromWitness {
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
func (f *federation) makeEvidence(a, b []byte, proof [][32]byte, v note.Verifier) {
	e, err := format.NewEquivocation(a, b, proof, v)
	if err != nil {
		f.logger.Error("making equivocation evidence", "origin", v.Name(), "err", err)
		return
	}
	f.queueEvidence(evidenceJob{e.Marshal(), fromHeads})
}

// onConflict: two verified heads of one observer, one size, two roots.
func (f *federation) onConflict(a, b *gossip.Head) {
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

// WitnessDir is where the node keeps its witness's Pebble state:
// DataDir/witness.
func (n *Node) WitnessDir() string { return filepath.Join(n.cfg.DataDir, "witness") }

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

func (m *fedMetrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.witnessed, m.evidence, m.observations, m.reloads, m.members}
}

// peerHeadTimeout bounds the consistency check of one peer head.
const peerHeadTimeout = 30 * time.Second
