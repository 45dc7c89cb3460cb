package queue

import (
	"bytes"
	"context"
	"crypto/hmac"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/histor-observer/histor/sandbox"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Handler receives every accepted result and every poisoned one
// (Result.Poisoned). It is never called concurrently. An error leaves the
// result to be offered again later; after a node crash between the
// handler's return and the ack the same result may come again, so the
// handler must treat a JobID it has already stored as done.
type Handler func(ctx context.Context, r Result) error

// handlerRetry is how long a result the handler failed on waits.
const handlerRetry = 5 * time.Second

// Run accepts results and records poisoned jobs until ctx ends.
func (q *Queue) Run(ctx context.Context, h Handler) error {
	var mu sync.Mutex
	serial := func(ctx context.Context, r Result) error {
		mu.Lock()
		defer mu.Unlock()
		return h(ctx, r)
	}
	adv := make(chan *nats.Msg, 256)
	sub, err := q.nc.ChanSubscribe(maxDeliverSubj, adv)
	if err != nil {
		return fmt.Errorf("subscribing to max-delivery advisories: %w", err)
	}
	defer sub.Unsubscribe()
	cc, err := q.results.Consume(func(m jetstream.Msg) { q.handleResult(ctx, m, serial) },
		jetstream.PullMaxMessages(16))
	if err != nil {
		return fmt.Errorf("consuming results: %w", err)
	}
	defer func() { cc.Stop(); <-cc.Closed() }()
	retry := map[uint64]int{}   // stream sequence → deliveries, of poisoned jobs not yet recorded
	q.sweep(ctx, retry, serial) // what ran out of deliveries while the node was away
	t := time.NewTicker(q.cfg.SweepEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case m := <-adv:
			if seq, d, ok := q.advisory(m); ok && !q.poison(ctx, seq, d, serial) {
				retry[seq] = d
			}
		case <-t.C:
			q.sweep(ctx, retry, serial)
		}
	}
}

func (q *Queue) handleResult(ctx context.Context, m jetstream.Msg, h Handler) {
	r, job, reason, detail := q.accept(ctx, m)
	if reason != "" {
		q.m.rejected.WithLabelValues(reason).Inc()
		q.log.Warn("result rejected", "reason", reason, "detail", detail,
			"subject", m.Subject(), "job", r.JobID, "target", r.Target)
		if err := m.Ack(); err != nil {
			q.log.Warn("dropping a rejected result", "err", err)
		}
		return
	}
	if err := h(ctx, r); err != nil {
		q.log.Warn("result handler failed; offering the result again later", "job", job.ID, "err", err)
		m.NakWithDelay(handlerRetry)
		return
	}
	q.finish(ctx, job.ID)
	if err := m.Ack(); err != nil {
		q.log.Warn("acking a handled result", "job", job.ID, "err", err)
	}
	q.m.done.Inc()
}

// finish forgets a pending job, so no second result for it is accepted.
func (q *Queue) finish(ctx context.Context, id string) {
	if err := q.pending.Purge(ctx, id); err != nil {
		q.log.Warn("forgetting a finished job", "job", id, "err", err)
	}
}

// accept checks a result message against the job it names. A non-empty
// reason means rejected.
func (q *Queue) accept(ctx context.Context, m jetstream.Msg) (r Result, job Job, reason, detail string) {
	dec := json.NewDecoder(bytes.NewReader(m.Data()))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return r, job, rejectMalformed, err.Error()
	}
	if m.Subject() != resultsPrefix+r.Worker {
		return r, job, rejectWorker, "worker " + r.Worker
	}
	job, err := q.pendingJob(ctx, r.JobID)
	if err != nil {
		return r, job, rejectUnknownJob, err.Error()
	}
	if r.Target != job.Target {
		return r, job, rejectTarget, "job is for " + job.Target
	}
	if !hmac.Equal(Bind(job.Token, r), r.Binding) {
		return r, job, rejectBinding, "hmac does not match the job token"
	}
	if err := q.checkEvidence(r.Evidence); err != nil {
		return r, job, rejectEvidence, err.Error()
	}
	if err := checkObservation(r.Observation, job.Target); err != nil {
		return r, job, rejectObservation, err.Error()
	}
	return r, job, "", ""
}

func (q *Queue) pendingJob(ctx context.Context, id string) (Job, error) {
	var job Job
	if len(id) != 32 || !isHex(id) {
		return job, errors.New("job id is not 32 hex digits")
	}
	e, err := q.pending.Get(ctx, id)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return job, errors.New("no pending job with this id")
	}
	if err != nil {
		return job, fmt.Errorf("reading pending job: %w", err)
	}
	if err := json.Unmarshal(e.Value(), &job); err != nil {
		return job, fmt.Errorf("reading pending job: %w", err)
	}
	return job, nil
}

func (q *Queue) checkEvidence(ev map[string][]byte) error {
	if len(ev) > q.cfg.MaxEvidence {
		return fmt.Errorf("%d evidence records, at most %d", len(ev), q.cfg.MaxEvidence)
	}
	n := 0
	for sri, b := range ev {
		n += len(b)
		if err := checkSRI(sri, b); err != nil {
			return err
		}
	}
	if n > q.cfg.MaxEvidenceBytes {
		return fmt.Errorf("%d bytes of evidence, at most %d", n, q.cfg.MaxEvidenceBytes)
	}
	return nil
}

// checkObservation makes sure the observation is of the job's package and
// does not claim an ending only the node records.
//
// Only the members it checks are decoded: the tools and serverInfo may hold
// numbers no float64 holds (1e400), which the node keeps as MTL/1 refusals
// (sandbox.ParseObservation), and must not make the result unreadable here.
func checkObservation(raw json.RawMessage, target string) error {
	var o struct {
		Type    string         `json:"type"`
		Package string         `json:"package"`
		Status  sandbox.Status `json:"status"`
	}
	if err := json.Unmarshal(raw, &o); err != nil {
		return fmt.Errorf("decoding observation: %w", err)
	}
	switch {
	case o.Type != sandbox.Type:
		return fmt.Errorf("observation type %q", o.Type)
	case o.Package != target:
		return fmt.Errorf("observation of %q", o.Package)
	case o.Status == sandbox.StatusPoisoned:
		return errors.New("a worker cannot report a poisoned job")
	case !o.Status.Known():
		return fmt.Errorf("observation status %q", o.Status)
	}
	return nil
}

// advisory reads one max-delivery advisory for the jobs consumer.
func (q *Queue) advisory(m *nats.Msg) (seq uint64, deliveries int, ok bool) {
	var a struct {
		Stream     string `json:"stream"`
		Consumer   string `json:"consumer"`
		StreamSeq  uint64 `json:"stream_seq"`
		Deliveries int    `json:"deliveries"`
	}
	if err := json.Unmarshal(m.Data, &a); err != nil || a.Stream != JobsStream || a.Consumer != JobsConsumer {
		q.log.Warn("ignoring a max-delivery advisory", "data", string(m.Data))
		return 0, 0, false
	}
	return a.StreamSeq, a.Deliveries, true
}

// maxSweep bounds one sweep's look-ups.
const maxSweep = 1024

// sweep retries the poisoned jobs the handler failed on, then looks for
// jobs that ran out of deliveries without the node hearing the advisory
// (advisories are not stored). Exhausted messages stay in the stream but
// leave the consumer's ack-pending set, so when nothing is ack-pending,
// every message at or below the last delivered sequence is one. Under
// constant load that moment may be late; the advisory is the fast path.
func (q *Queue) sweep(ctx context.Context, retry map[uint64]int, h Handler) {
	for seq, d := range retry {
		if q.poison(ctx, seq, d, h) {
			delete(retry, seq)
		}
	}
	ci, err := q.workers.Info(ctx)
	if err != nil {
		q.log.Warn("sweeping for poisoned jobs: reading the jobs consumer", "err", err)
		return
	}
	if ci.NumAckPending != 0 {
		return
	}
	si, err := q.jobs.Info(ctx)
	if err != nil {
		q.log.Warn("sweeping for poisoned jobs: reading the jobs stream", "err", err)
		return
	}
	last := ci.Delivered.Stream
	for seq, n := si.State.FirstSeq, 0; seq <= last && n < maxSweep && si.State.Msgs > 0; seq, n = seq+1, n+1 {
		if _, ok := retry[seq]; !ok && !q.poison(ctx, seq, q.cfg.MaxDeliver, h) {
			retry[seq] = q.cfg.MaxDeliver
		}
	}
}

// poison records the job at stream sequence seq as poisoned, then deletes
// it from the stream. A job already gone is left alone. It reports false
// when it should be tried again.
func (q *Queue) poison(ctx context.Context, seq uint64, deliveries int, h Handler) bool {
	raw, err := q.jobs.GetMsg(ctx, seq)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return true
	}
	if err != nil {
		q.log.Warn("reading a poisoned job", "seq", seq, "err", err)
		return false
	}
	var job Job
	if err := json.Unmarshal(raw.Data, &job); err == nil {
		if _, err = q.pendingJob(ctx, job.ID); err == nil {
			if err := q.recordPoisoned(ctx, job, deliveries, h); err != nil {
				q.log.Warn("recording a poisoned job; trying again on the next sweep", "job", job.ID, "err", err)
				return false
			}
		}
	}
	if err := q.jobs.DeleteMsg(ctx, seq); err != nil && !errors.Is(err, jetstream.ErrMsgNotFound) {
		q.log.Warn("deleting a poisoned job", "seq", seq, "err", err)
		return false
	}
	return true
}

func (q *Queue) recordPoisoned(ctx context.Context, job Job, deliveries int, h Handler) error {
	obs, err := json.Marshal(poisonedObservation(job, deliveries, q.cfg.Observer, time.Now()))
	if err != nil {
		return err
	}
	r := Result{JobID: job.ID, Target: job.Target, Deliveries: deliveries, Observation: obs}
	if err := h(ctx, r); err != nil {
		return err
	}
	q.finish(ctx, job.ID)
	q.m.poisoned.Inc()
	q.log.Warn("job poisoned", "job", job.ID, "target", job.Target, "deliveries", deliveries)
	return nil
}

// poisonedObservation is the node's record of a job no worker finished.
func poisonedObservation(job Job, deliveries int, observer string, now time.Time) sandbox.Observation {
	registry, name, version := splitTarget(job.Target)
	return sandbox.Observation{
		Type: sandbox.Type, Observer: observer, Registry: registry, Name: name, Version: version,
		Package: job.Target, ObservedAt: now.UTC().Format(time.RFC3339), Status: sandbox.StatusPoisoned,
		Detail: fmt.Sprintf("no worker finished the job in %d deliveries", deliveries),
		Limits: job.Limits, Stages: []sandbox.Stage{},
	}
}

// splitTarget splits npm:<name>@<version> (scoped names start with @) or
// pypi:<name>==<version>.
func splitTarget(t string) (registry, name, version string) {
	registry, rest, _ := strings.Cut(t, ":")
	sep := "@"
	if registry == "pypi" {
		sep = "=="
	}
	i := strings.LastIndex(rest, sep)
	if i <= 0 {
		return registry, rest, ""
	}
	return registry, rest[:i], rest[i+len(sep):]
}
