package command

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"
	"github.com/urfave/cli/v2/altsrc"

	"github.com/histor-observer/histor/crawl"
	"github.com/histor-observer/histor/crawl/guard"
	"github.com/histor-observer/histor/crawl/mcpclient"
	"github.com/histor-observer/histor/crawl/registry"
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

// crawlConfig maps the crawl flags onto crawl.Config; node.Config.Validate
// validates it with the rest of the node's settings.
func crawlConfig(c *cli.Context) crawl.Config {
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
	}
}

// checkCrawlFlags refuses crawl flags set to zero or less, which
// crawl.Config would read as "the default"; node.Config.Validate refuses
// the rest.
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
			cfg.Crawl.Progress = progress(d.stdio.Err)
			ctx, stop := signal.NotifyContext(c.Context, syscall.SIGTERM, syscall.SIGINT)
			defer stop()
			sum, err := d.crawlOnce(ctx, cfg)
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

// progress is the crawl's live display on w: a bar on a terminal, plain
// lines otherwise.
func progress(w io.Writer) *crawl.Progress {
	return crawl.NewProgress(w, isTerminal(w), 10*time.Second)
}

func isTerminal(w any) bool {
	f, ok := w.(*os.File)
	return ok && crawl.IsTerminal(f)
}
