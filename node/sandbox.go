package node

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
	"github.com/histor-observer/histor/crawl/registry"
	"github.com/histor-observer/histor/crawl/state"
	"github.com/histor-observer/histor/node/catalog"
	"github.com/histor-observer/histor/sandbox/pkgs"
	"github.com/histor-observer/histor/sandbox/queue"
)

// sandboxPart is the node's side of the package sandbox: the queue, the
// scheduler that fills it, the handler of what comes back and, when asked,
// a worker of its own. Everything it writes goes through the crawler's
// Record and the state, so a package's labels are made exactly as an
// endpoint's are.
type sandboxPart struct {
	cfg     SandboxConfig
	log     *slog.Logger
	q       *queue.Queue
	st      *state.Store
	cr      *crawl.Crawler
	catalog *catalog.Catalog
	curated *registry.Curated // nil: the registry's packages only
	pk      *pkgs.Packages    // resolves the latest version of an unversioned listing
	now     func() time.Time
	reg     prometheus.Registerer
	// recorded is called with the targets a result gave labels: the node
	// publishes them to its peers and wakes its events, as after a crawl.
	recorded func(ctx context.Context, ids []string)

	worker *SandboxWorker // the local worker; nil without LocalWorkers

	kick   chan struct{} // a round is wanted (after a crawl); capacity 1
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	round  sync.Mutex // one scheduling round at a time
}

// openSandbox opens the queue and starts the results handler, the
// scheduler and the local worker, when the sandbox is enabled.
func (n *Node) openSandbox(ctx context.Context) error {
	c := n.cfg.Sandbox
	if !c.Enabled {
		return nil
	}
	pk, err := pkgs.New(pkgs.Config{NPMRegistry: c.NPMRegistry, PyPI: c.PyPI, Client: &http.Client{Timeout: 30 * time.Second}})
	if err != nil {
		return err
	}
	s := &sandboxPart{cfg: c, log: n.cfg.Logger.With("component", "sandbox"), st: n.state, cr: n.cr,
		catalog: n.catalog, curated: n.cfg.Crawl.Curated, pk: pk, now: n.now, reg: n.cfg.registerer(), kick: make(chan struct{}, 1),
		recorded: n.ownPublisher()}
	local, err := s.localKey()
	if err != nil {
		return err
	}
	if s.q, err = queue.Open(ctx, n.queueConfig(local)); err != nil {
		return err
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	if err := s.startWorker(ctx, local); err != nil {
		s.stop()
		return err
	}
	s.wg.Go(func() {
		if err := s.q.Run(s.ctx, s.handle); err != nil {
			s.log.Error("the sandbox results handler stopped", "err", err)
		}
	})
	s.wg.Go(s.schedule)
	n.sbx.Store(s)
	return nil
}

func (n *Node) queueConfig(localKey string) queue.Config {
	c := n.cfg.Sandbox
	qc := queue.Config{
		DataDir: n.cfg.DataDir, Listen: c.Listen, TLS: c.TLS, TLSVerify: c.TLSVerify,
		URL: c.NATS, NATSOptions: c.NATSOptions, AckWait: c.AckWait, MaxDeliver: c.MaxDeliver,
		Observer: "histor-go/" + Version, Logger: n.cfg.Logger, Registry: n.cfg.registerer(),
	}
	qc.Workers = append(qc.Workers, c.Workers...)
	if localKey != "" {
		qc.Workers = append(qc.Workers, localKey)
	}
	return qc
}

// localKey is the public key of the node's own worker, whose seed lives in
// Host.Dir/local-worker.seed (made on first start); "" without local workers.
func (s *sandboxPart) localKey() (string, error) {
	if s.cfg.LocalWorkers == 0 {
		return "", nil
	}
	if err := os.MkdirAll(s.cfg.Host.Dir, 0o700); err != nil {
		return "", fmt.Errorf("creating the sandbox work dir: %w", err)
	}
	path := s.seedPath()
	if kp, err := queue.LoadSeedFile(path); err == nil {
		return kp.PublicKey()
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	return queue.CreateSeedFile(path)
}

func (s *sandboxPart) seedPath() string { return filepath.Join(s.cfg.Host.Dir, "local-worker.seed") }

// startWorker starts the in-process worker over loopback, when asked.
func (s *sandboxPart) startWorker(ctx context.Context, key string) error {
	if key == "" {
		return nil
	}
	w, err := NewSandboxWorker(ctx, WorkerSettings{
		Queue: queue.WorkerConfig{URL: s.q.ClientURL(), SeedFile: s.seedPath(), Concurrency: s.cfg.LocalWorkers},
		Host:  s.cfg.Host, Limits: s.cfg.Limits, Observe: s.cfg.Observe, Logger: s.log, Registerer: s.reg,
	})
	if err != nil {
		return fmt.Errorf("starting the local sandbox worker: %w", err)
	}
	s.worker = w
	s.wg.Go(func() {
		if err := w.Run(s.ctx); err != nil {
			s.log.Error("the local sandbox worker stopped", "err", err)
		}
	})
	return nil
}

// closeSandbox stops the scheduler, the worker and the handler, then the
// queue, so no result is handled after the crawler and the state close.
func (n *Node) closeSandbox() error {
	s := n.sbx.Swap(nil)
	if s == nil {
		return nil
	}
	return s.stop()
}

func (s *sandboxPart) stop() error {
	if s.cancel != nil {
		s.cancel()
	}
	s.wg.Wait()
	var errs []error
	if s.worker != nil {
		errs = append(errs, s.worker.Close())
	}
	if s.q != nil {
		errs = append(errs, s.q.Close())
	}
	return errors.Join(errs...)
}

// afterCrawl asks for a scheduling round: a crawl may have listed new
// packages or versions.
func (n *Node) afterCrawl() {
	if s := n.sbx.Load(); s != nil {
		select {
		case s.kick <- struct{}{}:
		default:
		}
	}
}

// schedule runs a round at start, after every crawl and on the interval.
func (s *sandboxPart) schedule() {
	t := time.NewTicker(s.cfg.Interval)
	defer t.Stop()
	for {
		if _, err := s.scheduleRound(s.ctx); err != nil && s.ctx.Err() == nil {
			s.log.Warn("sandbox scheduling round", "err", err)
		}
		select {
		case <-s.ctx.Done():
			return
		case <-s.kick:
		case <-t.C:
		}
	}
}
