package pkgruns

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/histor-observer/histor/crawl"
	"github.com/histor-observer/histor/crawl/mcpclient"
	"github.com/histor-observer/histor/crawl/registry"
	"github.com/histor-observer/histor/crawl/state"
	hlog "github.com/histor-observer/histor/log"
	"github.com/histor-observer/histor/sandbox/pkgs"
	"github.com/histor-observer/histor/sandbox/queue"
)

// RunReader is what reading the package runs needs of the crawl state: the
// targets and their runs. *state.Store is one.
type RunReader interface {
	Targets() ([]state.Target, error)
	PackageRun(id string) (*state.PackageRun, error)
	PackageVersions(id string, limit int) ([]state.PackageRun, error)
}

// Runs is what the part reads and writes of the crawl state. *state.Store
// is one.
type Runs interface {
	RunReader
	PackageVersion(id, version string) (*state.PackageRun, error)
	PutPackageRun(r state.PackageRun) error
}

// Recorder appends a package run's labels to the log and commits the run
// with the labels' state, in one batch. *crawl.Crawler is one.
type Recorder interface {
	Record(ctx context.Context, t registry.Target, obs *mcpclient.Observation, run *state.PackageRun, extra ...hlog.Evidence) (*crawl.Summary, error)
}

// Config is what the part is opened with: its settings and the node's
// parts it uses, each as the narrow view it needs.
type Config struct {
	// Settings are the node's Config.Sandbox, defaults applied.
	Settings Settings
	// DataDir is the node's data directory; the embedded queue keeps its
	// streams under it.
	DataDir string
	// Observer names this node in the jobs it queues (histor-go/<version>).
	Observer string

	Runs     Runs
	Recorder Recorder
	// Curated is the curated list whose packages the registry does not list
	// are observed too, in its order; nil: the registry's packages only.
	Curated *registry.Curated
	// Committed is called with the targets a result gave labels: the node
	// hands them to its catalog, its peer view and its security events, as
	// it does a crawl's. Nil: nothing is called.
	Committed func(ctx context.Context, ids []string)

	Now        func() time.Time
	Logger     *slog.Logger
	Registerer prometheus.Registerer
}

// Part is the node's side of the package sandbox, open: the queue, the
// scheduler that fills it, the handler of what comes back and, when asked,
// a worker of its own.
type Part struct {
	cfg       Settings
	log       *slog.Logger
	q         *queue.Queue
	st        Runs
	cr        Recorder
	curated   *registry.Curated // nil: the registry's packages only
	pk        *pkgs.Packages    // resolves the latest version of an unversioned listing
	now       func() time.Time
	reg       prometheus.Registerer
	committed func(ctx context.Context, ids []string)

	worker *Worker // the local worker; nil without LocalWorkers

	kick   chan struct{} // a round is wanted (after a crawl); capacity 1
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	round  sync.Mutex // one scheduling round at a time
}

// Open opens the queue and starts the results handler, the scheduler and
// the local worker. The caller opens it only when Settings.Enabled.
func Open(ctx context.Context, c Config) (*Part, error) {
	s := c.Settings
	pk, err := pkgs.New(pkgs.Config{NPMRegistry: s.NPMRegistry, PyPI: s.PyPI, Client: &http.Client{Timeout: 30 * time.Second}})
	if err != nil {
		return nil, fmt.Errorf("making the package registries' client: %w", err)
	}
	p := &Part{cfg: s, log: c.Logger.With("component", "sandbox"), st: c.Runs, cr: c.Recorder,
		curated: c.Curated, pk: pk, now: c.Now, reg: c.Registerer, kick: make(chan struct{}, 1),
		committed: c.Committed}
	local, err := p.localKey()
	if err != nil {
		return nil, err
	}
	if p.q, err = queue.Open(ctx, queueConfig(c, local)); err != nil {
		return nil, err
	}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	if err := p.startWorker(ctx, local); err != nil {
		p.Close()
		return nil, err
	}
	p.wg.Go(func() {
		if err := p.q.Run(p.ctx, p.handle); err != nil {
			p.log.Error("the sandbox results handler stopped", "err", err)
		}
	})
	p.wg.Go(p.schedule)
	return p, nil
}

// queueConfig is the queue's configuration for c, with the local worker's
// key among its workers when there is one.
func queueConfig(c Config, localKey string) queue.Config {
	s := c.Settings
	qc := queue.Config{
		DataDir: c.DataDir, Listen: s.Listen, TLS: s.TLS, TLSVerify: s.TLSVerify,
		URL: s.NATS, NATSOptions: s.NATSOptions, AckWait: s.AckWait, MaxDeliver: s.MaxDeliver,
		Observer: c.Observer, Logger: c.Logger, Registry: c.Registerer,
	}
	qc.Workers = append(qc.Workers, s.Workers...)
	if localKey != "" {
		qc.Workers = append(qc.Workers, localKey)
	}
	return qc
}

// localKey is the public key of the node's own worker, whose seed lives in
// Host.Dir/local-worker.seed (made on first start); "" without local workers.
func (p *Part) localKey() (string, error) {
	if p.cfg.LocalWorkers == 0 {
		return "", nil
	}
	if err := os.MkdirAll(p.cfg.Host.Dir, 0o700); err != nil {
		return "", fmt.Errorf("creating the sandbox work dir: %w", err)
	}
	path := p.seedPath()
	if kp, err := queue.LoadSeedFile(path); err == nil {
		return kp.PublicKey()
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	return queue.CreateSeedFile(path)
}

func (p *Part) seedPath() string { return filepath.Join(p.cfg.Host.Dir, "local-worker.seed") }

// startWorker starts the in-process worker over loopback, when asked.
func (p *Part) startWorker(ctx context.Context, key string) error {
	if key == "" {
		return nil
	}
	w, err := NewWorker(ctx, WorkerSettings{
		Queue: queue.WorkerConfig{URL: p.q.ClientURL(), SeedFile: p.seedPath(), Concurrency: p.cfg.LocalWorkers},
		Host:  p.cfg.Host, Limits: p.cfg.Limits, Observe: p.cfg.Observe, Logger: p.log, Registerer: p.reg,
	})
	if err != nil {
		return fmt.Errorf("starting the local sandbox worker: %w", err)
	}
	p.worker = w
	p.wg.Go(func() {
		if err := w.Run(p.ctx); err != nil {
			p.log.Error("the local sandbox worker stopped", "err", err)
		}
	})
	return nil
}

// Close stops the scheduler, the worker and the handler, then the queue, so
// no result is handled after the crawler and the state close.
func (p *Part) Close() error {
	if p.cancel != nil {
		p.cancel()
	}
	p.wg.Wait()
	var errs []error
	if p.worker != nil {
		errs = append(errs, p.worker.Close())
	}
	if p.q != nil {
		errs = append(errs, p.q.Close())
	}
	return errors.Join(errs...)
}

// Kick asks for a scheduling round: a crawl may have listed new packages or
// versions. It never blocks; a round already asked for covers this one.
func (p *Part) Kick() {
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

// QueueURL is where workers reach the part's queue (the embedded server's
// client URL, or the external cluster's).
func (p *Part) QueueURL() string { return p.q.ClientURL() }

// LocalWorker is the worker the part runs in the node; nil without
// LocalWorkers.
func (p *Part) LocalWorker() *Worker { return p.worker }

// schedule runs a round at start, after every Kick and on the interval.
func (p *Part) schedule() {
	t := time.NewTicker(p.cfg.Interval)
	defer t.Stop()
	for {
		if _, err := p.ScheduleRound(p.ctx); err != nil && p.ctx.Err() == nil {
			p.log.Warn("sandbox scheduling round", "err", err)
		}
		select {
		case <-p.ctx.Done():
			return
		case <-p.kick:
		case <-t.C:
		}
	}
}
