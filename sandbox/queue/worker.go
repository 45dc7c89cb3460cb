package queue

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/pbnjay/memory"
)

// Observe runs one job and returns its observation and evidence; the
// worker fills in the result's identity and binding. An error means the
// job could not be observed here (not that the package failed: that is an
// observation) and sends it back for another delivery.
type Observe func(ctx context.Context, job Job) (Result, error)

// WorkerConfig is one worker process's side.
type WorkerConfig struct {
	URL      string // the node's queue, e.g. nats://node:4222 or tls://node:4222
	SeedFile string // the worker's NKey seed (CreateSeedFile), mode 0600
	// TLS is required when the node requires it: RootCAs for the node's
	// certificate, Certificates for mTLS. Nil connects in plaintext.
	TLS *tls.Config
	// Concurrency is how many jobs run at once (default
	// DefaultConcurrency()).
	Concurrency int
	// NakDelay is how long a job whose Observe failed waits before its next
	// delivery (default 30 s).
	NakDelay time.Duration
	// Beat is how often a running job tells the server it is still alive
	// (default a third of the consumer's AckWait).
	Beat    time.Duration
	Observe Observe
	Logger  *slog.Logger // required
}

// perJobMemory is the sandbox's 512 MiB plus room for runsc and the
// worker's own buffers.
const perJobMemory = 512<<20 + 128<<20

// DefaultConcurrency is min(NumCPU, total memory / (512 MiB + 128 MiB)),
// at least 1.
func DefaultConcurrency() int {
	n := runtime.NumCPU()
	if m := int(memory.TotalMemory() / perJobMemory); m < n {
		n = m
	}
	return max(n, 1)
}

// Worker takes jobs from the node's queue, observes them and sends back
// bound results.
type Worker struct {
	cfg  WorkerConfig
	log  *slog.Logger
	pub  string // the worker's NKey public key, its name
	nc   *nats.Conn
	js   jetstream.JetStream
	cons jetstream.Consumer
}

// NewWorker connects to the node and looks up the shared jobs consumer. A
// key the node does not know is refused here.
func NewWorker(ctx context.Context, cfg WorkerConfig) (*Worker, error) {
	if cfg.Logger == nil || cfg.Observe == nil {
		return nil, errors.New("worker config: a logger and an Observe are required")
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = DefaultConcurrency()
	}
	if cfg.NakDelay <= 0 {
		cfg.NakDelay = 30 * time.Second
	}
	kp, err := LoadSeedFile(cfg.SeedFile)
	if err != nil {
		return nil, err
	}
	pub, _ := kp.PublicKey()
	opts := []nats.Option{nats.Name("histor-worker " + pub), nats.Nkey(pub, kp.Sign),
		nats.CustomInboxPrefix(inboxPrefix(pub)), nats.MaxReconnects(-1)}
	if cfg.TLS != nil {
		opts = append(opts, nats.Secure(cfg.TLS))
	}
	nc, err := nats.Connect(cfg.URL, opts...)
	if err != nil {
		return nil, fmt.Errorf("connecting to the queue at %s: %w", cfg.URL, err)
	}
	w := &Worker{cfg: cfg, log: cfg.Logger.With("component", "worker", "worker", pub), pub: pub, nc: nc}
	if err := w.lookup(ctx); err != nil {
		nc.Close()
		return nil, err
	}
	return w, nil
}

func (w *Worker) lookup(ctx context.Context) error {
	js, err := jetstream.New(w.nc)
	if err != nil {
		return fmt.Errorf("opening jetstream: %w", err)
	}
	w.js = js
	if w.cons, err = js.Consumer(ctx, JobsStream, JobsConsumer); err != nil {
		return fmt.Errorf("looking up the jobs consumer: %w", err)
	}
	if w.cfg.Beat <= 0 {
		w.cfg.Beat = w.cons.CachedInfo().Config.AckWait / 3
	}
	return nil
}

// Name is the worker's NKey public key.
func (w *Worker) Name() string { return w.pub }

// fetchWait is how long one pull waits for a job before asking again.
const fetchWait = 5 * time.Second

// Run takes jobs until ctx ends, never more than Concurrency at once. When
// ctx ends it stops taking jobs, cancels the running ones (which go back
// for another delivery at once) and returns when they have.
func (w *Worker) Run(ctx context.Context) error {
	slots := make(chan struct{}, w.cfg.Concurrency)
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			return nil
		}
		n := 1
		for n < w.cfg.Concurrency && tryTake(slots) {
			n++
		}
		got := w.fetch(ctx, n, func(m jetstream.Msg) {
			wg.Go(func() {
				defer func() { <-slots }()
				w.run(ctx, m)
			})
		})
		for ; got < n; got++ {
			<-slots
		}
	}
}

func tryTake(slots chan struct{}) bool {
	select {
	case slots <- struct{}{}:
		return true
	default:
		return false
	}
}

// fetch pulls up to n jobs and starts each; it returns how many it started.
func (w *Worker) fetch(ctx context.Context, n int, start func(jetstream.Msg)) int {
	fctx, cancel := context.WithTimeout(ctx, fetchWait)
	defer cancel()
	batch, err := w.cons.Fetch(n, jetstream.FetchContext(fctx))
	if err != nil {
		w.pause(ctx, "fetching jobs", err)
		return 0
	}
	got := 0
	for m := range batch.Messages() {
		got++
		start(m)
	}
	if err := batch.Error(); err != nil && !errors.Is(err, context.DeadlineExceeded) &&
		!errors.Is(err, context.Canceled) && !errors.Is(err, nats.ErrTimeout) {
		w.pause(ctx, "fetching jobs", err)
	}
	return got
}

// pause waits a moment after a failure so a broken connection is not a
// busy loop.
func (w *Worker) pause(ctx context.Context, what string, err error) {
	if ctx.Err() != nil {
		return
	}
	w.log.Warn(what, "err", err)
	select {
	case <-ctx.Done():
	case <-time.After(time.Second):
	}
}

// run observes one job, publishes its result and only then acks the job.
func (w *Worker) run(ctx context.Context, m jetstream.Msg) {
	var job Job
	if err := json.Unmarshal(m.Data(), &job); err != nil || job.check() != nil {
		w.log.Warn("terminating a malformed job", "err", err)
		m.TermWithReason("malformed job")
		return
	}
	log := w.log.With("job", job.ID, "target", job.Target)
	if ctx.Err() != nil {
		m.Nak() // fetched as we stopped: someone else's now
		return
	}
	deliveries := 1
	if md, err := m.Metadata(); err == nil {
		deliveries = int(md.NumDelivered)
	}
	r, err := w.observe(ctx, m, job)
	if err != nil {
		log.Warn("observing failed; the job goes back", "delivery", deliveries, "err", err)
		if ctx.Err() != nil {
			m.Nak()
		} else {
			m.NakWithDelay(w.cfg.NakDelay)
		}
		return
	}
	r.JobID, r.Target, r.Worker, r.Deliveries = job.ID, job.Target, w.pub, deliveries
	r.Binding = Bind(job.Token, r)
	// Publishing and acking finish even when ctx has just ended: the work
	// is done and would otherwise be repeated.
	pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if err := w.publish(pctx, r); err != nil {
		log.Warn("publishing the result failed; the job goes back", "err", err)
		m.NakWithDelay(w.cfg.NakDelay)
		return
	}
	if err := m.DoubleAck(pctx); err != nil {
		log.Warn("acking a finished job", "err", err)
	}
}

// observe runs Observe while beating, and stops beating when it returns.
func (w *Worker) observe(ctx context.Context, m jetstream.Msg, job Job) (Result, error) {
	bctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(w.cfg.Beat)
		defer t.Stop()
		for {
			select {
			case <-bctx.Done():
				return
			case <-t.C:
				if err := m.InProgress(); err != nil {
					w.log.Warn("beating", "job", job.ID, "err", err)
				}
			}
		}
	}()
	r, err := w.cfg.Observe(ctx, job)
	stop()
	<-done
	return r, err
}

// publish sends r and waits for the results stream to store it. The job
// ID is the message ID, so a result published twice (a retried publish,
// or a redelivered job finished again) is stored once.
func (w *Worker) publish(ctx context.Context, r Result) error {
	data, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("encoding result: %w", err)
	}
	if _, err := w.js.Publish(ctx, resultsPrefix+w.pub, data, jetstream.WithMsgID(r.JobID)); err != nil {
		return fmt.Errorf("publishing result: %w", err)
	}
	return nil
}

// Close closes the worker's connection.
func (w *Worker) Close() { w.nc.Close() }
