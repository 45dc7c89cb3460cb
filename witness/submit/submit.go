// Package submit sends a log's checkpoints to witnesses (c2sp.org/tlog-witness
// add-checkpoint) and collects their cosignatures.
//
// Every configured witness is asked in parallel. For each, the Submitter remembers the
// size the witness last cosigned (starting from 0, which a witness answers with 409 and
// its size if it has one), so it sends a consistency proof from that size. A 409 naming a
// size is retried once at that size; a 409 without it and a 422 mean the witness holds a
// view of the log this checkpoint does not extend, and are reported, never retried.
// Network errors, timeouts, 5xx and 429 are retried a bounded number of times with
// backoff. A cosignature counts only if it verifies under the witness's configured key.
//
// The Submitter keeps the newest checkpoint with every cosignature collected for it, the
// note a log serves at <prefix>/checkpoint, and, with a tlog-policy, the newest one whose
// cosignatures meet its quorum. Each witness's cosignature joins them as soon as it has
// verified, not when the slowest witness has answered: one witness retrying for seconds
// must not hold back what the others gave.
package submit

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/mod/sumdb/note"

	"github.com/histor-observer/histor/log/format"
)

// Config is everything New needs.
type Config struct {
	// Origin and Key are the log's checkpoint origin and Ed25519 public key; Submit
	// refuses a checkpoint they do not verify.
	Origin string
	Key    ed25519.PublicKey
	// Witnesses are asked for cosignatures, all of them for every checkpoint.
	Witnesses []Witness
	// Proof returns the RFC 9162 consistency proof from the log's tree of size old to
	// its tree of size new; (*log.Log).ConsistencyProof is one.
	Proof func(old, new uint64) ([][32]byte, error)
	// Policy, if set, decides which checkpoint Witnessed returns. Its witnesses need not
	// be the ones submitted to, but only cosignatures collected here are counted.
	Policy *format.Policy
	// Client sends the requests; nil means one of the Submitter's own, with keep-alive
	// and no redirects followed (a redirect is a refusal).
	Client *http.Client
	// Timeout bounds each request, answer included; 0 means 5 s.
	Timeout time.Duration
	// Attempts is how many requests one submission makes to a witness that keeps
	// failing in a way retrying might fix; 0 means 3.
	Attempts int
	// Backoff is the wait before the second attempt, doubled before each later one up
	// to MaxBackoff; 0 means 100 ms and 2 s. A 429's Retry-After (in seconds) can
	// lengthen a wait, never beyond MaxBackoff.
	Backoff, MaxBackoff time.Duration
	// Logger receives the Submitter's messages; nil discards them.
	Logger *slog.Logger
	// Registerer receives the histor_witness_submit_* metrics; nil registers none.
	// Close unregisters them.
	Registerer prometheus.Registerer
	// OnCosigned, if set, is called each time a cosignature is added to the latest
	// checkpoint, while Submit may still be waiting for other witnesses, so the caller
	// can serve or publish Latest again. It is called without the Submitter's lock, from
	// the goroutine of the witness that answered, and must not block (signal a channel).
	OnCosigned func()
}

const (
	defaultTimeout    = 5 * time.Second
	defaultAttempts   = 3
	defaultBackoff    = 100 * time.Millisecond
	defaultMaxBackoff = 2 * time.Second
	// maxProofLines is tlog-witness's bound on consistency proof lines in a request.
	maxProofLines = 63
	// maxAnswerBytes bounds what is read of an answer: a few signature lines, or an
	// error message worth keeping.
	maxAnswerBytes = 16 << 10
	// clipBody bounds the answer text kept in errors and logs.
	clipBody = 256
)

// Submitter submits one log's checkpoints. Its methods are safe for concurrent use.
type Submitter struct {
	cfg       Config
	verifier  note.Verifier
	client    *http.Client
	log       *slog.Logger
	metrics   *metrics
	witnesses []*witnessState

	mu sync.Mutex
	// latest is the newest checkpoint submitted, with the cosignatures collected for it;
	// its size never decreases. Guarded by mu.
	latest *cosigned
	// witnessed is the newest checkpoint note that met cfg.Policy, of size
	// witnessedSize; guarded by mu.
	witnessed     []byte
	witnessedSize uint64
}

// witnessState is what the Submitter knows of one witness.
type witnessState struct {
	Witness
	// turn serialises submissions to this witness, so each starts from the size the last
	// one left: a submission holds its one slot throughout. A channel rather than a
	// mutex, so a submission waiting for its turn is durably blocked under
	// testing/synctest and the fake clock moves on.
	turn chan struct{}
	// acked is the size the witness last said it cosigned (200, or a 409's size): the
	// old size of the next request. Guarded by turn.
	acked uint64
}

// New checks cfg and returns a Submitter.
func New(cfg Config) (*Submitter, error) {
	if err := cfg.setDefaults(); err != nil {
		return nil, fmt.Errorf("making witness submitter: %w", err)
	}
	v, err := format.NewVerifier(cfg.Origin, cfg.Key)
	if err != nil {
		return nil, fmt.Errorf("making witness submitter: %w", err)
	}
	s := &Submitter{cfg: cfg, verifier: v, client: cfg.Client, log: cfg.Logger}
	for _, w := range cfg.Witnesses {
		s.witnesses = append(s.witnesses, &witnessState{Witness: w, turn: make(chan struct{}, 1)})
	}
	if s.metrics, err = newMetrics(cfg.Registerer, cfg.Witnesses); err != nil {
		return nil, fmt.Errorf("making witness submitter: %w", err)
	}
	return s, nil
}

func (c *Config) setDefaults() error {
	if c.Proof == nil {
		return errors.New("Proof is required")
	}
	if err := checkDistinct(c.Witnesses); err != nil {
		return err
	}
	if c.Timeout == 0 {
		c.Timeout = defaultTimeout
	}
	if c.Attempts == 0 {
		c.Attempts = defaultAttempts
	}
	if c.Backoff == 0 {
		c.Backoff = defaultBackoff
	}
	if c.MaxBackoff == 0 {
		c.MaxBackoff = defaultMaxBackoff
	}
	if c.Timeout < 0 || c.Attempts < 0 || c.Backoff < 0 || c.MaxBackoff < c.Backoff {
		return errors.New("negative Timeout, Attempts or Backoff, or MaxBackoff below Backoff")
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if c.Client == nil {
		c.Client = newClient()
	}
	return nil
}

func newClient() *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = 4
	return &http.Client{
		Transport:     t,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// Close unregisters the metrics. Submissions under way finish.
func (s *Submitter) Close() error {
	s.metrics.unregister()
	return nil
}

// Result is what one Submit did.
type Result struct {
	Checkpoint format.Checkpoint
	// Note is the checkpoint with every cosignature collected for it so far, this
	// submission's and any earlier one's at the same size.
	Note []byte
	// Outcomes has one entry per configured witness, in configuration order.
	Outcomes []Outcome
	// Witnessed reports whether Note meets the policy's quorum (false without a policy).
	Witnessed bool
}

// Outcome is one witness's part of a submission.
type Outcome struct {
	Witness     Witness
	Cosignature *format.Cosignature // the verified cosignature; nil on error
	Requests    int                 // HTTP requests made
	Elapsed     time.Duration       // from the first request to the last answer, waits included
	Err         error               // one of the package's typed errors, or a proof error
}

// Submit submits a checkpoint signed by the log to every witness in parallel and waits
// for them all (bounded by Timeout, Attempts and the backoff). Each cosignature is added
// to the latest checkpoint as it arrives, if that is still this one, so Latest and
// Witnessed move before Submit returns. Submissions to one witness run one at a time, so
// a newer checkpoint waits for an older one's to end. It returns an error only wrapping
// every witness's failure (errors.As finds the typed ones) or for a checkpoint it will
// not submit: one the log's key does not verify, one smaller than a checkpoint already
// submitted (ErrStale), or one of the same size with another root (a
// *format.InconsistencyError: the log itself forked).
func (s *Submitter) Submit(ctx context.Context, checkpoint []byte) (Result, error) {
	c, err := format.ParseCheckpoint(checkpoint, s.verifier)
	if err != nil {
		return Result{}, fmt.Errorf("submitting checkpoint: %w", err)
	}
	if err := s.begin(c, checkpoint); err != nil {
		return Result{}, fmt.Errorf("submitting checkpoint of size %d: %w", c.Size, err)
	}
	outcomes := make([]Outcome, len(s.witnesses))
	var wg sync.WaitGroup
	for i, w := range s.witnesses {
		wg.Go(func() {
			outcomes[i] = s.submitTo(ctx, w, c, checkpoint)
			if sig := outcomes[i].Cosignature; sig != nil {
				s.merge(c, i, *sig)
			}
		})
	}
	wg.Wait()
	res := s.finish(c, checkpoint, outcomes)
	var errs []error
	for _, o := range outcomes {
		errs = append(errs, o.Err)
	}
	if err := errors.Join(errs...); err != nil {
		return res, fmt.Errorf("submitting checkpoint of size %d: %w", c.Size, err)
	}
	return res, nil
}

// begin makes c the latest checkpoint unless a larger one is, or one of its size with
// another root (the log's own fork, which no witness should be asked to see).
func (s *Submitter) begin(c format.Checkpoint, raw []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if l := s.latest; l != nil {
		switch {
		case c.Size < l.c.Size:
			return fmt.Errorf("size %d is below the %d submitted: %w", c.Size, l.c.Size, ErrStale)
		case c.Size == l.c.Size:
			return format.CheckConsistency(format.SignedHead{Raw: l.raw, Size: l.c.Size, Root: l.c.Root},
				format.SignedHead{Raw: raw, Size: c.Size, Root: c.Root}, nil)
		}
	}
	s.latest = newCosigned(c, raw, len(s.witnesses))
	return nil
}

// merge adds witness i's verified cosignature of c to the latest checkpoint, if that is
// still c (a larger one may have begun meanwhile: cosignatures of c say nothing about
// it), and tells OnCosigned when the note changed.
func (s *Submitter) merge(c format.Checkpoint, i int, sig format.Cosignature) {
	if s.mergeLocked(c, i, sig) && s.cfg.OnCosigned != nil {
		s.cfg.OnCosigned()
	}
}

func (s *Submitter) mergeLocked(c format.Checkpoint, i int, sig format.Cosignature) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.latest.c != c || !s.latest.add(i, sig) {
		return false
	}
	s.record(s.latest)
	return true
}

// finish makes the Result: the latest checkpoint's note if it is still c, with what
// merge added; otherwise c's note with this submission's cosignatures alone.
func (s *Submitter) finish(c format.Checkpoint, raw []byte, outcomes []Outcome) Result {
	s.mu.Lock()
	defer s.mu.Unlock()
	cs := s.latest
	if cs.c != c {
		cs = newCosigned(c, raw, len(s.witnesses))
		for i, o := range outcomes {
			if o.Cosignature != nil {
				cs.add(i, *o.Cosignature)
			}
		}
	}
	return Result{Checkpoint: c, Note: cs.note(), Outcomes: outcomes, Witnessed: s.record(cs)}
}

// record checks cs against the policy, keeps its note as the witnessed one if it meets
// the quorum and is not smaller than the one kept, updates the metrics if cs is the
// latest, and reports whether it met the quorum. The caller holds mu.
func (s *Submitter) record(cs *cosigned) (witnessed bool) {
	if s.cfg.Policy != nil {
		if _, met := s.cfg.Policy.Check(cs.c, cs.list()); met {
			witnessed = true
			if s.witnessed == nil || cs.c.Size >= s.witnessedSize {
				s.witnessed, s.witnessedSize = cs.note(), cs.c.Size
			}
		}
	}
	if cs == s.latest {
		s.metrics.setLatest(cs.c.Size, len(cs.list()), witnessed)
	}
	return witnessed
}

// Latest returns the newest checkpoint submitted, with every cosignature collected for
// it, as a signed note; nil before the first Submit.
func (s *Submitter) Latest() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.latest == nil {
		return nil
	}
	return s.latest.note()
}

// Witnessed returns the newest checkpoint note whose collected cosignatures met the
// policy's quorum; nil without a policy or before one did.
func (s *Submitter) Witnessed() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.witnessed
}
