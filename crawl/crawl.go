package crawl

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/histor-observer/histor/crawl/guard"
	"github.com/histor-observer/histor/crawl/mcpclient"
	"github.com/histor-observer/histor/crawl/registry"
	"github.com/histor-observer/histor/crawl/scan"
	"github.com/histor-observer/histor/crawl/state"
	hlog "github.com/histor-observer/histor/log"
	"github.com/histor-observer/histor/log/canon"
	"github.com/histor-observer/histor/log/mtl"
)

// ErrRunning is returned by Run while another crawl of the same Crawler runs.
var ErrRunning = errors.New("a crawl is already running")

// Crawler runs crawls. Lifecycle: New (validate, load the pattern and record
// sets and the opt-out list, build the guard and client), then Run once per
// crawl. It is safe for concurrent use; crawls do not overlap.
type Crawler struct {
	cfg    Config
	log    *hlog.Log
	key    ed25519.PrivateKey
	did    string
	st     *state.Store
	guard  *guard.Guard
	client *mcpclient.Client
	optOut *registry.OptOut
	regURN string
	logger *slog.Logger

	patterns *scan.PatternSet
	records  *scan.RecordSet
	// setEvidence holds the pattern and record sets as stored evidence.
	setEvidence []hlog.Evidence

	metrics *metrics

	running atomic.Bool
	// recordMu serialises Record: each package observation reads the state
	// the previous one wrote.
	recordMu sync.Mutex
	// self is the node's own face, a target of every crawl once set.
	self atomic.Pointer[registry.Target]
	// progress counts the running crawl's targets, for Progress; it is
	// Config.Progress when one was given (which also draws it).
	progress *Progress
}

// New validates cfg and prepares a crawler that appends to l, signs labels
// with key (whose did:key is did) and remembers targets in st. Its metrics
// are registered with cfg.Registerer until Close.
func New(cfg Config, l *hlog.Log, key ed25519.PrivateKey, did string, st *state.Store) (*Crawler, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if l == nil || st == nil || len(key) != ed25519.PrivateKeySize || did == "" {
		return nil, errors.New("crawl: a log, a state store, an Ed25519 key and its did are required")
	}
	c := &Crawler{cfg: cfg, log: l, key: key, did: did, st: st, logger: cfg.Logger, regURN: registryURN(cfg.Registry)}
	if cfg.AllowPrivateTargets {
		c.logger.Warn("CRAWLING PRIVATE TARGETS: http:// and loopback/private addresses are allowed; for tests and local demos only")
	}
	if c.cfg.Progress == nil {
		c.cfg.Progress = newCounter()
	}
	c.progress = c.cfg.Progress
	if err := c.loadSets(); err != nil {
		return nil, err
	}
	if err := c.buildClient(); err != nil {
		return nil, err
	}
	// Registered last, so a crawler New refuses leaves nothing registered.
	m, err := newMetrics(cfg.Registerer)
	if err != nil {
		return nil, err
	}
	c.metrics = m
	return c, nil
}

func (c *Crawler) loadSets() error {
	var err error
	c.patterns = scan.Default()
	if c.cfg.PatternSetFile != "" {
		if c.patterns, err = scan.LoadPatternSetFile(c.cfg.PatternSetFile); err != nil {
			return fmt.Errorf("loading pattern set: %w", err)
		}
	}
	c.records = scan.DefaultRecords()
	if c.cfg.ThreatRecordsFile != "" {
		if c.records, err = scan.LoadRecordSetFile(c.cfg.ThreatRecordsFile); err != nil {
			return fmt.Errorf("loading threat records: %w", err)
		}
	}
	if c.cfg.OptOutFile != "" {
		if c.optOut, err = registry.LoadOptOut(c.cfg.OptOutFile); err != nil {
			return fmt.Errorf("loading opt-out list: %w", err)
		}
	}
	return c.setBodies()
}

// setBodies renders the pattern and record sets as the exact bytes their
// digests are over, so a label's patternSet/recordSet reference resolves
// to evidence anyone can re-digest.
func (c *Crawler) setBodies() error {
	pb, err := canon.Marshal(map[string]any{"version": c.patterns.Version(), "rules": c.patterns.Rules()})
	if err != nil {
		return fmt.Errorf("rendering pattern set: %w", err)
	}
	rb, err := canon.Marshal(map[string]any{"version": c.records.Version(), "records": c.records.Records()})
	if err != nil {
		return fmt.Errorf("rendering record set: %w", err)
	}
	if mtl.SRI(pb) != c.patterns.Digest() || mtl.SRI(rb) != c.records.Digest() {
		return errors.New("rendering pattern and record sets: bodies do not match their digests")
	}
	c.setEvidence = []hlog.Evidence{{Kind: hlog.EvidencePatternSets, Body: pb}, {Kind: hlog.EvidenceRecordSets, Body: rb}}
	return nil
}

func (c *Crawler) buildClient() error {
	gc := c.cfg.Guard
	gc.AllowPrivate = c.cfg.AllowPrivateTargets
	gc.MaxConnsPerHost = c.cfg.PerHost
	gc.MaxResponseHeaderBytes = c.cfg.MaxResponseHeaderBytes
	gc.UserAgent = guard.UserAgent(c.cfg.Version, c.cfg.PublicURL)
	gc.Logger = c.logger
	g, err := guard.New(gc)
	if err != nil {
		return fmt.Errorf("building address guard: %w", err)
	}
	c.guard = g
	c.client = mcpclient.New(mcpclient.Config{
		HTTP: g.Client(), UserAgent: gc.UserAgent, ClientVersion: c.cfg.Version, Deadline: c.cfg.Deadline,
		MaxResponseBytes: c.cfg.MaxResponseBytes, MaxToolSetBytes: c.cfg.MaxToolSetBytes,
		MaxTools: c.cfg.MaxTools, MaxPages: c.cfg.MaxPages, MaxSSEEventBytes: c.cfg.MaxSSEEventBytes,
		MaxJSONDepth: c.cfg.MaxJSONDepth, Classify: guard.Status, Logger: c.logger,
	})
	return nil
}

// PatternSet is the pattern set the crawler's scan labels use.
func (c *Crawler) PatternSet() *scan.PatternSet { return c.patterns }

// RecordSet is the threat record set the crawler's name-threat labels use.
func (c *Crawler) RecordSet() *scan.RecordSet { return c.records }

// Close unregisters the crawler's metrics, so a crawler built afterwards
// over the same registry (a node closed and opened again) can register its
// own, and releases the idle connections kept between requests. It is safe
// to call more than once. A crawl may still run afterwards, uncounted.
func (c *Crawler) Close() {
	c.metrics.unregister()
	c.guard.Client().CloseIdleConnections()
}

// Progress reports how far the running crawl is: Done of Of targets
// committed. ok is false when no crawl is running or the running one has
// not finished reading the registry yet.
func (c *Crawler) Progress() (p ProgressSnapshot, ok bool) {
	if !c.running.Load() {
		return ProgressSnapshot{}, false
	}
	return c.progress.snapshot()
}

// Run performs one full crawl and signs a head after it. The summary is
// returned even with an error when some targets were processed.
func (c *Crawler) Run(ctx context.Context) (*Summary, error) {
	if !c.running.CompareAndSwap(false, true) {
		return nil, ErrRunning
	}
	defer c.running.Store(false)
	c.progress.reset()
	defer c.progress.reset()
	// Every observation checks (and pins) its address afresh; forgetting the
	// pins after a crawl keeps a long-running node from holding one for
	// every host it ever saw.
	defer c.guard.Forget()
	sum, err := c.run(ctx)
	c.metrics.record(sum, err)
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	if rerr := c.st.AddRun(sum.run(msg)); rerr != nil && err == nil {
		err = rerr
	}
	return sum, err
}

func (c *Crawler) run(ctx context.Context) (*Summary, error) {
	sum := newSummary(c.cfg.Now())
	res, err := c.harvest(ctx)
	if res == nil || !res.Complete {
		var kerr error
		if res, kerr = c.withKnown(res); kerr != nil {
			return sum, kerr
		}
	}
	if cur := c.cfg.Curated; cur != nil {
		res.Targets = append(res.Targets, cur.Beyond(res.Targets)...)
	}
	if t := c.self.Load(); t != nil {
		res.Targets = append(res.Targets, *t)
	}
	if len(res.Targets) == 0 {
		sum.finish(c.cfg.Now())
		return sum, err
	}
	sum.Complete = res.Complete
	if err := c.syncTargets(res, sum); err != nil {
		return sum, err
	}
	if err := c.observeAll(ctx, res, sum); err != nil {
		return sum, err
	}
	if err := c.st.SetPatternSet(c.patterns.Digest()); err != nil {
		return sum, err
	}
	if _, serr := c.log.SignHead(context.WithoutCancel(ctx)); serr != nil && err == nil {
		err = fmt.Errorf("signing head after crawl: %w", serr)
	}
	sum.finish(c.cfg.Now())
	if err == nil {
		err = ctx.Err()
	}
	c.logger.Info("crawl finished", "targets", sum.Targets, "labels", sum.Labels, "changes", sum.Changes,
		"complete", sum.Complete, "duration", sum.Duration, "statuses", sum.ByStatus)
	return sum, err
}

// harvest reads the registry. A partial harvest is still crawled (what it
// found is real) but reported, and never delists anything.
func (c *Crawler) harvest(ctx context.Context) (*registry.Result, error) {
	opts := c.cfg.RegistryOptions
	opts.UserAgent = guard.UserAgent(c.cfg.Version, c.cfg.PublicURL)
	opts.OptOut = c.optOut
	if opts.Logger == nil {
		opts.Logger = c.logger
	}
	res, err := registry.Harvest(ctx, c.cfg.RegistryClient, c.cfg.Registry, opts)
	if err != nil {
		err = fmt.Errorf("harvesting registry: %w", err)
		if res == nil || len(res.Targets) == 0 {
			return nil, err
		}
		c.logger.Warn("registry harvest incomplete; crawling what was read, delisting nothing", "error", err)
	}
	return res, err
}

// withKnown adds to an incomplete (or failed) harvest every listed target an
// earlier harvest found and this one did not reach, so that every target
// still gets a status on this crawl. An incomplete harvest delists nothing.
func (c *Crawler) withKnown(res *registry.Result) (*registry.Result, error) {
	known, err := c.st.Targets()
	if err != nil {
		return res, fmt.Errorf("reading known targets: %w", err)
	}
	if res == nil {
		res = &registry.Result{}
	}
	have := make(map[string]bool, len(res.Targets))
	for _, t := range res.Targets {
		have[t.ID] = true
	}
	for _, t := range known {
		if !t.Delisted && !have[t.ID] {
			res.Targets = append(res.Targets, t.Target)
		}
	}
	return res, nil
}

// syncTargets stores the harvested targets (keeping each one's last status
// until this crawl gives it a new one) and, after a complete harvest only,
// marks the targets that are no longer listed. sum counts every target
// written among the run's Committed.
func (c *Crawler) syncTargets(res *registry.Result, sum *Summary) error {
	prev, err := c.st.Targets()
	if err != nil {
		return fmt.Errorf("reading targets: %w", err)
	}
	byID := make(map[string]state.Target, len(prev))
	prevReg := make([]registry.Target, 0, len(prev))
	for _, t := range prev {
		byID[t.ID] = t
		prevReg = append(prevReg, t.Target)
	}
	out := make([]state.Target, 0, len(res.Targets))
	for _, t := range res.Targets {
		old := byID[t.ID]
		out = append(out, state.Target{Target: t, Status: old.Status, Detail: old.Detail, LastCrawled: old.LastCrawled})
	}
	for _, d := range registry.Delist(prevReg, res) {
		if d.Delisted && !byID[d.ID].Delisted {
			c.logger.Info("target delisted", "id", d.ID, "name", d.Name, "endpoint", d.Endpoint)
		}
		old := byID[d.ID]
		old.Target = d
		out = append(out, old)
	}
	for _, t := range out {
		sum.commit(t.ID)
	}
	return c.st.PutTargets(out)
}

// observeAll runs the workers over every harvested target and the committer
// over their results.
func (c *Crawler) observeAll(ctx context.Context, res *registry.Result, sum *Summary) error {
	prev, err := c.st.Observations()
	if err != nil {
		return fmt.Errorf("reading observations: %w", err)
	}
	byID := make(map[string]*state.Observation, len(prev))
	for i := range prev {
		byID[prev[i].TargetID] = &prev[i]
	}
	names := make([]string, 0, res.Servers)
	seen := map[string]bool{}
	var dial, skipped []registry.Target
	for _, t := range res.Targets {
		if !seen[t.Name] {
			seen[t.Name] = true
			names = append(names, t.Name)
		}
		switch {
		case t.Sandboxed():
			// A package: the sandbox observes it and hands the
			// observation to Record; the crawl only keeps it listed.
		case t.Skip != "":
			skipped = append(skipped, t)
		default:
			dial = append(dial, t)
		}
	}
	job := &crawlJob{c: c, set: c.settings(scan.NewNameIndex(names)), prev: byID}
	c.cfg.Progress.start(len(dial) + len(skipped))
	results := make(chan *prepared, c.cfg.Workers)
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.commitLoop(ctx, results, sum)
	}()
	for _, t := range skipped {
		results <- job.process(t, nil)
	}
	c.runWorkers(ctx, job, newScheduler(dial, c.cfg.PerHost), results)
	close(results)
	<-done
	c.cfg.Progress.finish()
	return nil
}

// settings are this crawl's fixed settings for its decisions.
func (c *Crawler) settings(index *scan.NameIndex) *settings {
	return &settings{
		gap: c.cfg.ContinuityGap, regURN: c.regURN, patterns: c.patterns, records: c.records,
		sets: c.patterns.Digest() + "|" + c.records.Digest(), index: index, limits: c.cfg.ScanLimits,
	}
}

func (c *Crawler) runWorkers(ctx context.Context, job *crawlJob, s *scheduler, out chan<- *prepared) {
	var wg sync.WaitGroup
	for range c.cfg.Workers {
		wg.Go(func() {
			for {
				t, release, ok := s.take(ctx)
				if !ok {
					return
				}
				obs := c.observe(ctx, t)
				release()
				if ctx.Err() != nil {
					// Shutting down: the cut-short observation says nothing
					// about the server, so it must not start an unreachable
					// stretch. The target keeps its previous state.
					return
				}
				out <- job.process(t, obs)
			}
		})
	}
	wg.Wait()
}

// observe checks the endpoint with the guard (resolving it afresh, once)
// and reads its tool list.
//
// The observation deadline starts before the lookup, so a resolver that
// never answers ends as a timeout, not a worker held for ever.
func (c *Crawler) observe(ctx context.Context, t registry.Target) *mcpclient.Observation {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.Deadline)
	defer cancel()
	target, err := c.guard.Check(ctx, t.Endpoint)
	if err != nil {
		status, ok := guard.Status(err)
		switch {
		case errors.Is(ctx.Err(), context.DeadlineExceeded):
			status = mcpclient.StatusTimeout
		case !ok:
			status = mcpclient.StatusNetwork
		}
		return &mcpclient.Observation{Status: status, Detail: err.Error()}
	}
	return c.client.Observe(ctx, target.URL.String(), mcpclient.Transport(t.Transport))
}

// now is the crawl clock in UTC, whole seconds, as labels carry it.
func (c *Crawler) now() time.Time { return c.cfg.Now().UTC().Truncate(time.Second) }

// SetSelf makes t, the node's own MCP face (Endpoint an http URL on the
// node's listen address as an IP literal), a target of every crawl from now
// on, observed like any server: its address is the one non-global address
// the guard lets through.
func (c *Crawler) SetSelf(t registry.Target) error {
	ap, err := selfAddr(t.Endpoint)
	if err != nil {
		return err
	}
	c.guard.SetSelf(ap)
	c.self.Store(&t)
	return nil
}

// selfAddr is the IP literal and port of the node's own face.
func selfAddr(endpoint string) (netip.AddrPort, error) {
	u, err := url.Parse(endpoint)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("own face %q: %w", endpoint, err)
	}
	port := u.Port()
	if port == "" {
		port = "80"
		if u.Scheme == "https" {
			port = "443"
		}
	}
	ap, err := netip.ParseAddrPort(net.JoinHostPort(u.Hostname(), port))
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("own face %q: the host must be an IP literal: %w", endpoint, err)
	}
	return ap, nil
}
