// Package demo is `histor demo`: three observers on loopback, each with its own data
// directory, HTTP port, libp2p port and source address, crawling a local registry of local
// MCP servers every few seconds, entirely offline. One server changes its tool definitions
// between crawls (every observer records the change); one shows the third observer another
// tool set than the other two (a split view, which the federation makes visible).
//
// It is built on node.New and node.Config, as `histor serve` is; the federation settings of
// each observer (libp2p listen address, peers, allow-list) are made in one place, federate.
package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/histor-observer/histor/crawl/guard"
	"github.com/histor-observer/histor/node"
)

// Observers is how many observers the demo runs.
const Observers = 3

// Port offsets from Config.HTTPBase: the observers' libp2p hosts, and the fixture (registry,
// then its MCP servers).
const (
	p2pOffset     = 100
	fixtureOffset = 200
	fixturePorts  = 4
)

// Config is what one demo run needs.
type Config struct {
	// Data is the parent of the observers' data directories (DIR/observer-1, …); kept after
	// the demo ends. Empty: a temporary directory, removed at the end.
	Data string
	// HTTPBase is observer 1's HTTP port; observer i serves on HTTPBase+i-1 and its libp2p
	// host listens on HTTPBase+100+i-1, TCP and QUIC. The registry fixture is on
	// HTTPBase+200 and its MCP servers on the next three ports.
	HTTPBase int
	// Interval is the crawl interval of every observer.
	Interval time.Duration
	// Ready bounds the start: every observer must be serving (node.Ready) within it.
	Ready time.Duration
	// Logger receives the nodes' logs.
	Logger *slog.Logger
}

// Command is the `histor demo` command.
func Command() *cli.Command {
	return &cli.Command{
		Name:      "demo",
		Usage:     "run three observers on loopback against local MCP servers (offline; Ctrl-C stops it)",
		UsageText: "histor demo [--data DIR] [--http-base PORT] [--interval DURATION]",
		Description: "Starts a local registry, three local MCP servers and three observers (HTTP on PORT, PORT+1, PORT+2; " +
			"libp2p on PORT+100..PORT+102; dialling from 127.0.0.1, 127.0.0.2 and 127.0.0.3; the fixture on PORT+200..PORT+203), " +
			"prints where to look, " +
			"and runs until SIGINT or SIGTERM.",
		// Plain flags, not read from --config: a node's "data" there must never be the demo's.
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "data", Usage: "keep the observers' data in `DIR` (default: a temporary directory, removed at exit)", EnvVars: []string{"HISTOR_DEMO_DATA"}},
			&cli.IntFlag{Name: "http-base", Value: 8080, Usage: "observer 1 serves HTTP on `PORT`, the others on the next two", EnvVars: []string{"HISTOR_DEMO_HTTP_BASE"}},
			&cli.DurationFlag{Name: "interval", Value: 5 * time.Second, Usage: "each observer crawls every `DURATION`", EnvVars: []string{"HISTOR_DEMO_INTERVAL"}},
		},
		Action: func(c *cli.Context) error {
			if c.Duration("interval") <= 0 {
				return cli.Exit("demo: --interval must be positive", 2)
			}
			base := c.Int("http-base")
			if base < 1 || base+fixtureOffset+fixturePorts > 65535 {
				return cli.Exit(fmt.Sprintf("demo: --http-base %d leaves no room for the observers' ports", base), 2)
			}
			ctx, stop := signal.NotifyContext(c.Context, syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			logger := slog.New(slog.NewTextHandler(c.App.ErrWriter, &slog.HandlerOptions{Level: slog.LevelError}))
			cfg := Config{Data: c.String("data"), HTTPBase: base, Interval: c.Duration("interval"), Ready: 10 * time.Second, Logger: logger}
			if err := Run(ctx, cfg, c.App.Writer); err != nil {
				return cli.Exit("demo: "+err.Error(), 1)
			}
			return nil
		},
	}
}

// observer is one of the demo's observers as planned before its node starts.
type observer struct {
	n         int // 1-based
	dir       string
	httpAddr  string
	p2pPort   int
	localAddr netip.Addr
	did       string // set by federate
	cfg       node.Config
}

// Run runs the demo until ctx is done, writing what to look at to out.
func Run(ctx context.Context, cfg Config, out io.Writer) (err error) {
	data, cleanup, err := dataDir(cfg.Data)
	if err != nil {
		return err
	}
	defer cleanup()
	obs, err := plan(cfg, data)
	if err != nil {
		return err
	}
	addrs := make([]string, len(obs))
	for i, o := range obs {
		addrs[i] = o.localAddr.String()
	}
	fx, err := startFixture(cfg.HTTPBase+fixtureOffset, addrs)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, fx.close()) }()
	for i := range obs {
		obs[i].cfg = nodeConfig(cfg, obs[i], fx.registryURL)
	}
	if err := federate(obs); err != nil {
		return err
	}
	return runObservers(ctx, cfg, obs, fx, out)
}

func dataDir(dir string) (string, func(), error) {
	if dir != "" {
		return dir, func() {}, os.MkdirAll(dir, 0o700)
	}
	tmp, err := os.MkdirTemp("", "histor-demo-")
	if err != nil {
		return "", nil, fmt.Errorf("making the demo's data directory: %w", err)
	}
	return tmp, func() { os.RemoveAll(tmp) }, nil
}

// plan lays out the observers: directories, ports, source addresses and identities.
func plan(cfg Config, data string) ([]observer, error) {
	obs := make([]observer, Observers)
	for i := range obs {
		o := &obs[i]
		o.n = i + 1
		o.dir = filepath.Join(data, fmt.Sprintf("observer-%d", o.n))
		o.httpAddr = fmt.Sprintf("127.0.0.1:%d", cfg.HTTPBase+i)
		o.p2pPort = cfg.HTTPBase + p2pOffset + i
		o.localAddr = netip.AddrFrom4([4]byte{127, 0, 0, byte(o.n)})
	}
	return obs, nil
}

func nodeConfig(cfg Config, o observer, registryURL string) node.Config {
	c := node.Config{
		ObserveOwnFace: true,
		DataDir:        o.dir,
		HTTPAddr:       o.httpAddr,
		LogOrigin:      fmt.Sprintf("observer-%d.histor.demo/log", o.n),
		PublicURL:      "http://" + o.httpAddr,
		CrawlInterval:  cfg.Interval,
		Logger:         cfg.Logger.With("observer", o.n),
		// Every check is answered: the demo invites a newcomer to try /check by hand.
		ChecksPerMinute: -1,
	}
	c.Crawl.Registry = registryURL
	c.Crawl.AllowPrivateTargets = true // the demo's servers are on loopback
	c.Crawl.Guard = guard.Config{LocalAddr: o.localAddr}
	c.Crawl.Deadline = cfg.Interval
	return c
}

// runObservers runs every node until ctx is done, printing the guide once all are ready.
func runObservers(ctx context.Context, cfg Config, obs []observer, fx *fixture, out io.Writer) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make([]error, len(obs))
	var wg sync.WaitGroup
	nodes := make([]*node.Node, len(obs))
	for i := range obs {
		n, err := node.New(obs[i].cfg)
		if err != nil {
			return fmt.Errorf("observer %d: %w", obs[i].n, err)
		}
		nodes[i] = n
		wg.Add(1)
		go func() {
			defer wg.Done()
			if errs[i] = n.Run(ctx); errs[i] != nil {
				errs[i] = fmt.Errorf("observer %d: %w", obs[i].n, errs[i])
				cancel() // one observer down stops the demo
			}
		}()
	}
	if err := waitReady(ctx, nodes, cfg.Ready); err != nil {
		cancel()
		wg.Wait()
		return errors.Join(append(errs, err)...)
	}
	guide(out, cfg, obs, fx)
	<-ctx.Done()
	wg.Wait()
	fmt.Fprintln(out, "\nhistor demo: stopped.")
	return errors.Join(errs...)
}

// waitReady waits until every node serves, for up to limit.
func waitReady(ctx context.Context, nodes []*node.Node, limit time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	for i, n := range nodes {
		select {
		case <-n.Ready():
		case <-ctx.Done():
			return fmt.Errorf("observer %d was not serving within %s", i+1, limit)
		}
	}
	return nil
}
