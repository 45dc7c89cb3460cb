package node

import (
	"context"
	"errors"

	"github.com/histor-observer/histor/node/pkgruns"
	"github.com/histor-observer/histor/sandbox/observer"
	"github.com/histor-observer/histor/sandbox/queue"
)

// SandboxConfig is the node's sandbox part: the work queue that carries
// package observations to workers, the scheduler that fills it, and the
// handler that turns what comes back into labels. pkgruns.Settings
// documents each field; the part is off unless Enabled.
type SandboxConfig = pkgruns.Settings

// Defaults of SandboxConfig.
const (
	DefaultSandboxInterval = pkgruns.DefaultInterval
	DefaultMaxJobsPerRound = pkgruns.DefaultMaxJobsPerRound
)

// SandboxWorker is one sandbox worker: an observer on its host taking jobs
// from a queue, for `histor sandbox worker` and a node's own local worker
// alike (pkgruns.Worker).
type SandboxWorker = pkgruns.Worker

// WorkerSettings say which queue a worker takes jobs from and how it
// observes them (pkgruns.WorkerSettings).
type WorkerSettings = pkgruns.WorkerSettings

// NewSandboxWorker starts the observer (unless Observe is given) and
// connects to the queue.
func NewSandboxWorker(ctx context.Context, s WorkerSettings) (*SandboxWorker, error) {
	return pkgruns.NewWorker(ctx, s)
}

// ObserveJobs is a worker's Observe over the sandbox observer o
// (pkgruns.ObserveJobs).
func ObserveJobs(o *observer.Observer) queue.Observe { return pkgruns.ObserveJobs(o) }

func (c *Config) applySandboxDefaults() { c.Sandbox.ApplyDefaults(c.DataDir) }

// checkSandbox validates the sandbox part's settings, their defaults
// applied.
func (c *Config) checkSandbox() error {
	c.applySandboxDefaults()
	return c.Sandbox.Check()
}

// sandboxConfig is the sandbox part's configuration: the node's settings
// and the parts opened before it, each as the narrow view the part takes.
func (n *Node) sandboxConfig() pkgruns.Config {
	return pkgruns.Config{
		Settings: n.cfg.Sandbox, DataDir: n.cfg.DataDir, Observer: "histor-go/" + Version,
		Runs: n.state, Recorder: n.cr, Curated: n.cfg.Crawl.Curated,
		Committed: n.sandboxCommitted(), Now: n.now, Logger: n.cfg.Logger, Registerer: n.cfg.registerer(),
	}
}

// sandboxCommitted hands the targets a sandbox result gave labels on as a
// crawl's (commits), so the catalog, peers and subscribers need not wait for
// the next crawl.
func (n *Node) sandboxCommitted() func(ctx context.Context, ids []string) {
	c := n.commits()
	return func(ctx context.Context, ids []string) { c.commit(ctx, ids, ids) }
}

// afterCrawl asks the sandbox part, when open, for a scheduling round: a
// crawl may have listed new packages or versions.
func (n *Node) afterCrawl() {
	if s := n.sbx.Load(); s != nil {
		s.Kick()
	}
}

// Census is the node's signed behaviour census. The node must be open.
func (n *Node) Census() ([]byte, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.state == nil {
		return nil, errors.New("census: node not open")
	}
	return n.packageView().Census()
}

// packageView reads the sandbox's runs for the API; it needs the crawl
// state only, not an open sandbox part.
func (n *Node) packageView() *pkgruns.View {
	return pkgruns.NewView(pkgruns.ViewConfig{Runs: n.state, Curated: n.cfg.Crawl.Curated, Key: n.id.logKey, DID: n.id.did, Now: n.now})
}

// packageRoutes are the sandbox part's routes, reading a.packages on every
// request.
func (a *api) packageRoutes() []Route {
	return pkgruns.Routes(func() *pkgruns.View { return a.packages }, a.logger)
}
