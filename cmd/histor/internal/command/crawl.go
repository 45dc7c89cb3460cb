package command

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"
	"github.com/urfave/cli/v2/altsrc"

	"github.com/histor-observer/histor/crawl"
	"github.com/histor-observer/histor/crawl/guard"
	"github.com/histor-observer/histor/crawl/mcpclient"
	"github.com/histor-observer/histor/crawl/registry"
	"github.com/histor-observer/histor/crawl/state"
	"github.com/histor-observer/histor/log/keys"
	"github.com/histor-observer/histor/node"
)

// crawlFlags are crawl.Config's fields, one flag each; crawl.Config documents them.
func crawlFlags() []cli.Flag {
	return []cli.Flag{
		altsrc.NewStringFlag(&cli.StringFlag{Name: "registry", Value: registry.DefaultBase, Usage: "harvest the MCP registry at `URL`", EnvVars: []string{"HISTOR_REGISTRY"}}),
		altsrc.NewBoolFlag(&cli.BoolFlag{Name: "allow-private-targets", Usage: "also dial http:// and loopback/private addresses (tests and local demos only)", EnvVars: []string{"HISTOR_ALLOW_PRIVATE_TARGETS"}}),
		altsrc.NewIntFlag(&cli.IntFlag{Name: "workers", Value: crawl.DefaultWorkers, Usage: "observe `N` endpoints at once", EnvVars: []string{"HISTOR_WORKERS"}}),
		altsrc.NewDurationFlag(&cli.DurationFlag{Name: "continuity-gap", Value: crawl.DefaultContinuityGap, Usage: "least `DURATION` between two continuity links of one target", EnvVars: []string{"HISTOR_CONTINUITY_GAP"}}),
		altsrc.NewStringFlag(&cli.StringFlag{Name: "opt-out", Usage: "never dial the hosts and endpoints listed in `FILE`", EnvVars: []string{"HISTOR_OPT_OUT"}}),
		altsrc.NewStringFlag(&cli.StringFlag{Name: "pattern-set", Usage: "scan with the pattern set in `FILE` (default: the one shipped with histor)", EnvVars: []string{"HISTOR_PATTERN_SET"}}),
		altsrc.NewStringFlag(&cli.StringFlag{Name: "threat-records", Usage: "match names against the threat records in `FILE` (default: the ones shipped with histor)", EnvVars: []string{"HISTOR_THREAT_RECORDS"}}),
		altsrc.NewIntFlag(&cli.IntFlag{Name: "per-host", Value: crawl.DefaultPerHost, Usage: "at most `N` connections to one host name at any moment (at least 2)", EnvVars: []string{"HISTOR_PER_HOST"}}),
		altsrc.NewDurationFlag(&cli.DurationFlag{Name: "observation-deadline", Value: crawl.DefaultDeadline, Usage: "`DURATION` one whole observation may take, name lookup to last page", EnvVars: []string{"HISTOR_OBSERVATION_DEADLINE"}}),
		altsrc.NewInt64Flag(&cli.Int64Flag{Name: "max-response-bytes", Value: mcpclient.DefaultMaxResponseBytes, Usage: "at most `BYTES` in one response body, after decompression", EnvVars: []string{"HISTOR_MAX_RESPONSE_BYTES"}}),
		altsrc.NewInt64Flag(&cli.Int64Flag{Name: "max-toolset-bytes", Value: mcpclient.DefaultMaxToolSetBytes, Usage: "at most `BYTES` in all tools/list responses of one observation (up to 4 MiB)", EnvVars: []string{"HISTOR_MAX_TOOLSET_BYTES"}}),
		altsrc.NewIntFlag(&cli.IntFlag{Name: "max-tools", Value: mcpclient.DefaultMaxTools, Usage: "at most `N` tools in one observation", EnvVars: []string{"HISTOR_MAX_TOOLS"}}),
		altsrc.NewIntFlag(&cli.IntFlag{Name: "max-pages", Value: mcpclient.DefaultMaxPages, Usage: "at most `N` tools/list pages in one observation", EnvVars: []string{"HISTOR_MAX_PAGES"}}),
		altsrc.NewIntFlag(&cli.IntFlag{Name: "max-sse-event-bytes", Value: mcpclient.DefaultMaxSSEEventBytes, Usage: "at most `BYTES` in one server-sent event", EnvVars: []string{"HISTOR_MAX_SSE_EVENT_BYTES"}}),
		altsrc.NewInt64Flag(&cli.Int64Flag{Name: "max-response-header-bytes", Value: guard.DefaultMaxResponseHeaderBytes, Usage: "at most `BYTES` in one response header", EnvVars: []string{"HISTOR_MAX_RESPONSE_HEADER_BYTES"}}),
		altsrc.NewIntFlag(&cli.IntFlag{Name: "max-json-depth", Value: mcpclient.DefaultMaxJSONDepth, Usage: "at most `N` levels of JSON nesting in one message (up to 64)", EnvVars: []string{"HISTOR_MAX_JSON_DEPTH"}}),
		altsrc.NewIntFlag(&cli.IntFlag{Name: "registry-max-pages", Value: registry.DefaultMaxPages, Usage: "read at most `N` pages of the registry", EnvVars: []string{"HISTOR_REGISTRY_MAX_PAGES"}}),
		altsrc.NewInt64Flag(&cli.Int64Flag{Name: "registry-max-page-bytes", Value: registry.DefaultMaxPageBytes, Usage: "at most `BYTES` in one registry page", EnvVars: []string{"HISTOR_REGISTRY_MAX_PAGE_BYTES"}}),
		altsrc.NewIntFlag(&cli.IntFlag{Name: "registry-max-servers", Value: registry.DefaultMaxServers, Usage: "read at most `N` server entries from the registry", EnvVars: []string{"HISTOR_REGISTRY_MAX_SERVERS"}}),
	}
}

// crawlConfig maps the crawl flags onto crawl.Config; crawl.New validates it.
func crawlConfig(c *cli.Context, publicURL string, logger *slog.Logger) crawl.Config {
	return crawl.Config{
		Registry:               c.String("registry"),
		AllowPrivateTargets:    c.Bool("allow-private-targets"),
		Workers:                c.Int("workers"),
		ContinuityGap:          c.Duration("continuity-gap"),
		OptOutFile:             c.String("opt-out"),
		PatternSetFile:         c.String("pattern-set"),
		ThreatRecordsFile:      c.String("threat-records"),
		PerHost:                c.Int("per-host"),
		Deadline:               c.Duration("observation-deadline"),
		MaxResponseBytes:       c.Int64("max-response-bytes"),
		MaxToolSetBytes:        c.Int64("max-toolset-bytes"),
		MaxTools:               c.Int("max-tools"),
		MaxPages:               c.Int("max-pages"),
		MaxSSEEventBytes:       c.Int("max-sse-event-bytes"),
		MaxJSONDepth:           c.Int("max-json-depth"),
		MaxResponseHeaderBytes: c.Int64("max-response-header-bytes"),
		RegistryOptions: registry.Options{
			MaxPages:     c.Int("registry-max-pages"),
			MaxPageBytes: c.Int64("registry-max-page-bytes"),
			MaxServers:   c.Int("registry-max-servers"),
		},
		PublicURL: publicURL,
		Version:   node.Version,
		Logger:    logger,
	}
}

// checkCrawlFlags refuses values no crawl can use, before anything is
// opened: flags set to zero or less (which crawl.Config would read as "the
// default"), then whatever crawl.Config.Validate refuses.
func checkCrawlFlags(c *cli.Context) error {
	if c.Int("workers") < 1 {
		return usageError(errors.New("--workers must be at least 1"))
	}
	if c.Duration("continuity-gap") <= 0 {
		return usageError(errors.New("--continuity-gap must be positive"))
	}
	if c.Duration("observation-deadline") <= 0 {
		return usageError(errors.New("--observation-deadline must be positive"))
	}
	for _, name := range []string{"max-response-bytes", "max-toolset-bytes", "max-response-header-bytes", "registry-max-page-bytes"} {
		if c.Int64(name) < 1 {
			return usageError(fmt.Errorf("--%s must be at least 1", name))
		}
	}
	for _, name := range []string{"max-tools", "max-pages", "max-sse-event-bytes", "max-json-depth", "registry-max-pages", "registry-max-servers"} {
		if c.Int(name) < 1 {
			return usageError(fmt.Errorf("--%s must be at least 1", name))
		}
	}
	cc := crawlConfig(c, "", nil)
	if err := cc.Validate(); err != nil {
		return usageError(err)
	}
	return nil
}

func crawlCommand(d deps) *cli.Command {
	flags := []cli.Flag{}
	for _, f := range serveFlags() {
		switch f.Names()[0] {
		case "data", "origin", "seed", "public-url", "cache-bytes", "witness-name":
			flags = append(flags, f)
		}
	}
	return &cli.Command{
		Name:      "crawl",
		Usage:     "run one full crawl of the MCP registry into the node's log, then print a summary",
		UsageText: "histor crawl --data DIR [--registry URL] [--allow-private-targets] [--workers N] [--continuity-gap D] [--opt-out FILE] [--pattern-set FILE] [--threat-records FILE]",
		Description: "Harvests the registry, observes every remote endpoint (initialize and tools/list only, never a tool call), " +
			"appends the labels to the log in --data, records targets, observations and change records in DIR/state, " +
			"and signs a head. Shows a progress bar on a terminal and plain progress lines otherwise. " +
			"The node must not be serving from the same --data at the same time.",
		Flags: append(flags, crawlFlags()...),
		Action: func(c *cli.Context) error {
			cfg, err := nodeConfig(c)
			if err != nil {
				return err
			}
			if err := checkCrawlFlags(c); err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(c.Context, syscall.SIGTERM, syscall.SIGINT)
			defer stop()
			cc := crawlConfig(c, cfg.PublicURL, cfg.Logger)
			cc.Progress = crawl.NewProgress(d.stdio.Err, isTerminal(d.stdio.Err), 10*time.Second)
			sum, err := crawlOnce(ctx, cfg, cc)
			if sum != nil {
				sum.Write(d.stdio.Out)
			}
			if err != nil {
				return &exitError{code: 1, err: fmt.Errorf("crawl: %w", err)}
			}
			return nil
		},
	}
}

func isTerminal(w any) bool {
	f, ok := w.(*os.File)
	return ok && crawl.IsTerminal(f)
}

// crawlOnce opens the node's log and crawl state and runs one crawl.
func crawlOnce(ctx context.Context, cfg node.Config, cc crawl.Config) (*crawl.Summary, error) {
	n, err := node.New(cfg)
	if err != nil {
		return nil, err
	}
	if err := n.Open(ctx); err != nil {
		return nil, err
	}
	defer n.Close()
	cr, closeState, err := newCrawler(n, cfg, cc)
	if err != nil {
		return nil, err
	}
	defer closeState()
	defer cr.Close()
	return cr.Run(ctx)
}

// newCrawler opens DataDir/state and builds a crawler that signs with the
// node's log key (labels and heads share one issuer, as HISTOR's do).
func newCrawler(n *node.Node, cfg node.Config, cc crawl.Config) (*crawl.Crawler, func(), error) {
	seed, err := keys.Load(cfg.SeedFile)
	if err != nil {
		return nil, nil, fmt.Errorf("loading node seed: %w", err)
	}
	st, err := state.Open(filepath.Join(cfg.DataDir, "state"), cfg.Logger)
	if err != nil {
		return nil, nil, err
	}
	cr, err := crawl.New(cc, n.Log(), seed.LogKey(), n.DID(), st, cfg.Logger)
	if err != nil {
		st.Close()
		return nil, nil, err
	}
	return cr, func() { st.Close() }, nil
}

// serveCrawl is what serve needs to crawl on a schedule.
type serveCrawl struct {
	Interval time.Duration // 0: never crawl
	Config   crawl.Config
}

// crawlStatus is /health's view of the crawler, set once it exists.
type crawlStatus struct{ cr atomic.Pointer[crawl.Crawler] }

func (s *crawlStatus) report() (bool, string) {
	cr := s.cr.Load()
	if cr == nil {
		return false, ""
	}
	return cr.Running(), cr.LastError()
}

// runNodeWithCrawl serves the node and, with a positive interval, crawls
// once at start in the background and then every interval (±10% jitter, so
// a fleet of nodes restarted together does not crawl in lockstep), signing
// a head after each crawl.
func runNodeWithCrawl(ctx context.Context, cfg node.Config, sc serveCrawl) error {
	status := &crawlStatus{}
	cfg.CrawlStatus = status.report
	n, err := node.New(cfg)
	if err != nil {
		return err
	}
	if err := n.Open(ctx); err != nil {
		return err
	}
	defer n.Close()
	var cr *crawl.Crawler
	if sc.Interval > 0 {
		var closeState func()
		if cr, closeState, err = newCrawler(n, cfg, sc.Config); err != nil {
			return err
		}
		defer closeState()
		defer cr.Close()
		status.cr.Store(cr)
	}
	ln, err := net.Listen("tcp", cfg.HTTPAddr)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", cfg.HTTPAddr, err)
	}
	// Deferred in this order so that on return the crawl is cancelled, then
	// waited for, and only then are the state and the log closed.
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	if cr != nil {
		wg.Go(func() { crawlLoop(ctx, cr, sc.Interval, cfg.Logger) })
	}
	return n.Serve(ctx, ln)
}

func crawlLoop(ctx context.Context, cr *crawl.Crawler, interval time.Duration, logger *slog.Logger) {
	for {
		if _, err := cr.Run(ctx); err != nil && ctx.Err() == nil {
			logger.Error("crawl failed", "error", err)
		}
		t := time.NewTimer(jitter(interval))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// jitter spreads d by ±10%.
func jitter(d time.Duration) time.Duration {
	return d + time.Duration((rand.Float64()*0.2-0.1)*float64(d))
}
