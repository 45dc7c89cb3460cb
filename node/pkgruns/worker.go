package pkgruns

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/histor-observer/histor/sandbox"
	"github.com/histor-observer/histor/sandbox/observer"
	"github.com/histor-observer/histor/sandbox/queue"
)

// Worker is one sandbox worker: an observer on its host taking jobs from a queue. It is
// `histor sandbox worker` and a node's own local worker alike, so their lifecycle is written
// once: NewWorker, Run until the context ends, Close.
type Worker struct {
	w     *queue.Worker
	close func() error // releases the observer; nil when Observe was given
}

// WorkerSettings say which queue a worker takes jobs from and how it observes them.
type WorkerSettings struct {
	// Queue is what queue.WorkerConfig takes: URL, SeedFile, TLS, Concurrency, NakDelay.
	Queue queue.WorkerConfig
	// Host is the observer's host; Limits its own caps (zero: the observer's defaults).
	Host   observer.Host
	Limits sandbox.Limits
	// Observe, when set, runs each job instead of an observer on Host (tests, fakes).
	Observe    queue.Observe
	Logger     *slog.Logger
	Registerer prometheus.Registerer
}

// NewWorker starts the observer (unless Observe is given) and connects to the queue.
func NewWorker(ctx context.Context, s WorkerSettings) (*Worker, error) {
	sw := &Worker{}
	observe := s.Observe
	if observe == nil {
		cfg, err := s.Host.Config()
		if err != nil {
			return nil, err
		}
		cfg.Limits, cfg.Concurrency, cfg.Logger, cfg.Registerer = s.Limits, s.Queue.Concurrency, s.Logger, s.Registerer
		o, err := observer.New(ctx, cfg)
		if err != nil {
			return nil, fmt.Errorf("starting the sandbox observer: %w", err)
		}
		observe, sw.close = ObserveJobs(o), o.Close
	}
	qc := s.Queue
	qc.Observe, qc.Logger = observe, s.Logger
	w, err := queue.NewWorker(ctx, qc)
	if err != nil {
		if sw.close != nil {
			sw.close()
		}
		return nil, fmt.Errorf("connecting to the queue: %w", err)
	}
	sw.w = w
	return sw, nil
}

// Name is the worker's name in the queue.
func (sw *Worker) Name() string { return sw.w.Name() }

// Run takes jobs until ctx ends.
func (sw *Worker) Run(ctx context.Context) error { return sw.w.Run(ctx) }

// Close disconnects from the queue, then releases the observer.
func (sw *Worker) Close() error {
	sw.w.Close()
	if sw.close != nil {
		return sw.close()
	}
	return nil
}
