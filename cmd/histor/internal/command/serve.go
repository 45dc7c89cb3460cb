package command

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"
	"github.com/urfave/cli/v2/altsrc"

	"github.com/histor-observer/histor/node"
	"github.com/histor-observer/histor/node/webhook"
)

// serveFlags are node.Config's fields, one flag each; node.Config documents their meaning.
func serveFlags() []cli.Flag {
	return []cli.Flag{
		altsrc.NewStringFlag(&cli.StringFlag{Name: "data", Usage: "keep the node's state (seed, log) in `DIR`; required", EnvVars: []string{"HISTOR_DATA"}}),
		altsrc.NewStringFlag(&cli.StringFlag{Name: "http", Value: node.DefaultHTTPAddr, Usage: "serve the API on `ADDR` (host:port; \":8080\" for every interface)", EnvVars: []string{"HISTOR_HTTP"}}),
		altsrc.NewStringFlag(&cli.StringFlag{Name: "origin", Value: node.DefaultLogOrigin, Usage: "the log's `NAME`: C2SP checkpoint origin and note key name, e.g. observer.example.org/log; never change it once the log has heads", EnvVars: []string{"HISTOR_ORIGIN"}}),
		altsrc.NewStringFlag(&cli.StringFlag{Name: "witness-name", Usage: "key `NAME` of the node's cosignature/v1 witness key (default: the origin with /log replaced by /witness)", EnvVars: []string{"HISTOR_WITNESS_NAME"}}),
		altsrc.NewStringFlag(&cli.StringFlag{Name: "seed", Usage: "read the node's 32-byte seed from `FILE`, generating it (mode 0600) if missing (default: DIR/seed)", EnvVars: []string{"HISTOR_SEED"}}),
		altsrc.NewStringFlag(&cli.StringFlag{Name: "public-url", Usage: "absolute http(s) `URL` the node is reachable at, announced by /api/v1/issuer", EnvVars: []string{"HISTOR_PUBLIC_URL"}}),
		altsrc.NewIntFlag(&cli.IntFlag{Name: "max-entries", Value: node.DefaultMaxEntries, Usage: "at most `N` leaves in one /api/v1/log/entries answer (1..1000)", EnvVars: []string{"HISTOR_MAX_ENTRIES"}}),
		altsrc.NewInt64Flag(&cli.Int64Flag{Name: "cache-bytes", Value: node.DefaultCacheBytes, Usage: "Pebble block cache of the log, in `BYTES`", EnvVars: []string{"HISTOR_CACHE_BYTES"}}),
		altsrc.NewIntFlag(&cli.IntFlag{Name: "max-in-flight", Value: node.DefaultMaxInFlight, Usage: "work on at most `N` requests at once; one more is answered 503 with Retry-After (1..65536)", EnvVars: []string{"HISTOR_MAX_IN_FLIGHT"}}),
		altsrc.NewIntFlag(&cli.IntFlag{Name: "max-header-bytes", Value: node.DefaultMaxHeaderBytes, Usage: "largest request header accepted, in `BYTES` (1 KiB..1 MiB)", EnvVars: []string{"HISTOR_MAX_HEADER_BYTES"}}),
		altsrc.NewDurationFlag(&cli.DurationFlag{Name: "read-header-timeout", Value: node.DefaultReadHeaderTimeout, Usage: "`DURATION` allowed to read a request's header", EnvVars: []string{"HISTOR_READ_HEADER_TIMEOUT"}}),
		altsrc.NewDurationFlag(&cli.DurationFlag{Name: "read-timeout", Value: node.DefaultReadTimeout, Usage: "`DURATION` allowed to read a whole request", EnvVars: []string{"HISTOR_READ_TIMEOUT"}}),
		altsrc.NewDurationFlag(&cli.DurationFlag{Name: "write-timeout", Value: node.DefaultWriteTimeout, Usage: "`DURATION` allowed to write an answer", EnvVars: []string{"HISTOR_WRITE_TIMEOUT"}}),
		altsrc.NewDurationFlag(&cli.DurationFlag{Name: "idle-timeout", Value: node.DefaultIdleTimeout, Usage: "`DURATION` an idle keep-alive connection stays open", EnvVars: []string{"HISTOR_IDLE_TIMEOUT"}}),
		altsrc.NewDurationFlag(&cli.DurationFlag{Name: "shutdown-timeout", Value: node.DefaultShutdownTimeout, Usage: "on SIGTERM or SIGINT, the `DURATION` requests in flight may take to finish", EnvVars: []string{"HISTOR_SHUTDOWN_TIMEOUT"}}),
	}
}

func serveCommand(d deps) *cli.Command {
	return &cli.Command{
		Name:      "serve",
		Usage:     "run a node: open (or create) the log in --data and serve it over HTTP",
		UsageText: "histor serve --data DIR [--http ADDR] [--origin NAME] [--seed FILE] [options]",
		Description: "Opens the log (a new one signs its size-0 checkpoint; an existing one keeps its heads), checks its " +
			"integrity and refuses to start over a damaged data directory, and serves the HISTOR JSON API under /api/v1/ " +
			"and C2SP tlog-tiles under /log/ until SIGTERM or SIGINT. With --crawl-interval it crawls in the background, " +
			"counting from the last recorded crawl, and each crawl signs a head.",
		Flags: append(append(append(append(serveFlags(), nodeOnlyFlags()...), crawlFlags()...), federationFlags()...), sandboxNodeFlags()...),
		Action: func(c *cli.Context) error {
			cfg, err := nodeConfig(c)
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(c.Context, syscall.SIGTERM, syscall.SIGINT)
			defer stop()
			if err := d.runNode(ctx, cfg); err != nil {
				return &exitError{code: 1, err: fmt.Errorf("serve: %w", err)}
			}
			return nil
		},
	}
}

// nodeConfig maps the command's flags onto one node.Config and validates it, once, before
// anything is opened. A flag the command does not have reads as its zero value, which
// node.Config takes as its default.
func nodeConfig(c *cli.Context) (node.Config, error) {
	log, err := logger(c, c.App.ErrWriter)
	if err != nil {
		return node.Config{}, err
	}
	if c.Duration("crawl-interval") < 0 {
		return node.Config{}, usageError(errors.New("--crawl-interval must not be negative"))
	}
	if err := checkCrawlFlags(c); err != nil {
		return node.Config{}, err
	}
	checks, err := checkLimitFlags(c)
	if err != nil {
		return node.Config{}, err
	}
	cfg := node.Config{
		DataDir:           c.String("data"),
		HTTPAddr:          c.String("http"),
		LogOrigin:         c.String("origin"),
		WitnessName:       c.String("witness-name"),
		SeedFile:          c.String("seed"),
		PublicURL:         c.String("public-url"),
		MaxEntries:        c.Int("max-entries"),
		CacheBytes:        c.Int64("cache-bytes"),
		MaxInFlight:       c.Int("max-in-flight"),
		MaxHeaderBytes:    c.Int("max-header-bytes"),
		ReadHeaderTimeout: c.Duration("read-header-timeout"),
		ReadTimeout:       c.Duration("read-timeout"),
		WriteTimeout:      c.Duration("write-timeout"),
		IdleTimeout:       c.Duration("idle-timeout"),
		ShutdownTimeout:   c.Duration("shutdown-timeout"),
		Profile:           c.String("profile"),
		OperatorToken:     c.String("operator-token"),
		ObserveOwnFace:    c.Bool("observe-own-face"),
		Crawl:             crawlConfig(c),
		CrawlInterval:     c.Duration("crawl-interval"),
		ChecksPerMinute:   checks.perMinute,
		ScansPerHour:      checks.scansPerHour,
		MaxCheckClients:   checks.maxClients,
		TrustedProxies:    checks.proxies,
		ReceiptIssuers:    c.StringSlice("receipt-issuer"),
		Logger:            log,
	}
	federationConfig(c, &cfg)
	if err := webhookConfig(c, &cfg); err != nil {
		return node.Config{}, err
	}
	if hasFlag(c.Command, "sandbox") {
		if err := sandboxNodeConfig(c, &cfg); err != nil {
			return node.Config{}, err
		}
	}
	if err := cfg.Validate(); err != nil {
		return node.Config{}, usageError(err)
	}
	return cfg, nil
}

// defaultCrawlInterval is HISTOR's: a serving histor crawls daily unless told otherwise (a
// node.Config without CrawlInterval, for a library user, never crawls on a schedule).
const defaultCrawlInterval = 24 * time.Hour

// nodeOnlyFlags are the node.Config fields only a serving node uses.
func nodeOnlyFlags() []cli.Flag {
	return []cli.Flag{
		altsrc.NewDurationFlag(&cli.DurationFlag{Name: "crawl-interval", Value: defaultCrawlInterval,
			Usage: "crawl every `DURATION` (±10% jitter), counted from the start of the last recorded crawl (at once if none, " +
				"within the hour after a failed one); 0 never crawls on a schedule", EnvVars: []string{"HISTOR_CRAWL_INTERVAL"}}),
		altsrc.NewBoolFlag(&cli.BoolFlag{Name: "observe-own-face", Value: true, Usage: "observe the node's own MCP face (/mcp) every crawl, " +
			"like any server, so its tool definitions are in its own log", EnvVars: []string{"HISTOR_OBSERVE_OWN_FACE"}}),
		altsrc.NewStringFlag(&cli.StringFlag{Name: "operator-token", Usage: "`TOKEN` the operator's routes (POST /api/v1/admin/crawl) require in the x-histor-operator header; " +
			"unset, they answer 503. Prefer the environment variable: a command line is visible to every local user", EnvVars: []string{"HISTOR_OPERATOR_TOKEN"}}),
		altsrc.NewStringFlag(&cli.StringFlag{Name: "profile", Value: node.ProfileDev, Usage: "`PROFILE` dev or prod; prod refuses to start without an operator token of at least " +
			"24 characters and an https --public-url, or with --allow-private-targets", EnvVars: []string{"HISTOR_PROFILE"}}),
		altsrc.NewIntFlag(&cli.IntFlag{Name: "checks-per-minute", Value: node.DefaultChecksPerMinute, Usage: "answer at most `N` POST /api/v1/check " +
			"a minute from one client (an IPv4 address or an IPv6 /64), then 429 with Retry-After; -1: no limit", EnvVars: []string{"HISTOR_CHECKS_PER_MINUTE"}}),
		altsrc.NewIntFlag(&cli.IntFlag{Name: "scans-per-hour", Value: node.DefaultScansPerHour, Usage: "let one client's checks start at most `N` " +
			"pattern scans of tool sets never scanned before an hour (beyond it: patternScan not-scanned); -1: no fresh scans", EnvVars: []string{"HISTOR_SCANS_PER_HOUR"}}),
		altsrc.NewIntFlag(&cli.IntFlag{Name: "max-check-clients", Value: node.DefaultMaxCheckClients, Usage: "track at most `N` clients in each /check " +
			"limit (1..4194304); beyond them new clients share one bucket", EnvVars: []string{"HISTOR_MAX_CHECK_CLIENTS"}}),
		altsrc.NewStringFlag(&cli.StringFlag{Name: "webhook", Usage: "POST every security event to `URL` (https only), signed as HISTOR " +
			"signs webhooks; needs --webhook-secret-file", EnvVars: []string{"HISTOR_WEBHOOK"}}),
		altsrc.NewStringFlag(&cli.StringFlag{Name: "webhook-secret-file", Usage: "`FILE` holding the --webhook secret (at least 32 characters; " +
			"a final newline is dropped)", EnvVars: []string{"HISTOR_WEBHOOK_SECRET_FILE"}}),
		altsrc.NewStringSliceFlag(&cli.StringSliceFlag{Name: "receipt-issuer", Usage: "log the signed receipt anchors of the AIMarket hub `DID` " +
			"(an Ed25519 did:key; repeat the flag for each hub) at POST /api/v1/receipts/anchors; none: that route accepts nothing",
			EnvVars: []string{"HISTOR_RECEIPT_ISSUERS"}}),
		altsrc.NewStringFlag(&cli.StringFlag{Name: "trusted-proxies", Usage: "`CIDRS` (comma-separated, e.g. 10.0.0.0/8,fd00::/8) of the reverse " +
			"proxies whose X-Forwarded-For names the client; default none: the connection's peer is the client", EnvVars: []string{"HISTOR_TRUSTED_PROXIES"}}),
	}
}

// checkLimits are the /check flags, checked.
type checkLimits struct {
	perMinute, scansPerHour, maxClients int
	proxies                             []netip.Prefix
}

// checkLimitFlags reads the /check flags of serve (a command without them, crawl, keeps the
// zero values, node.Config's defaults). 0, which node.Config reads as "the default", is refused
// where a user could mean "none": --checks-per-minute and --scans-per-hour say -1 for that, and
// only -1, so a typo never turns a limit off.
func checkLimitFlags(c *cli.Context) (checkLimits, error) {
	if !hasFlag(c.Command, "checks-per-minute") {
		return checkLimits{}, nil
	}
	l := checkLimits{perMinute: c.Int("checks-per-minute"), scansPerHour: c.Int("scans-per-hour"), maxClients: c.Int("max-check-clients")}
	if l.perMinute == 0 || l.perMinute < -1 {
		return l, usageError(errors.New("--checks-per-minute must be at least 1, or -1 for no limit"))
	}
	if l.scansPerHour == 0 || l.scansPerHour < -1 {
		return l, usageError(errors.New("--scans-per-hour must be at least 1, or -1 for no fresh scans"))
	}
	if l.maxClients < 1 {
		return l, usageError(errors.New("--max-check-clients must be at least 1"))
	}
	var err error
	if l.proxies, err = parsePrefixes(c.String("trusted-proxies")); err != nil {
		return l, usageError(fmt.Errorf("--trusted-proxies: %w", err))
	}
	return l, nil
}

func hasFlag(cmd *cli.Command, name string) bool {
	for _, f := range cmd.Flags {
		if slices.Contains(f.Names(), name) {
			return true
		}
	}
	return false
}

// parsePrefixes reads a comma-separated list of CIDR prefixes strictly: each in its canonical
// form (no host bits set, no zone, an IPv4 prefix written as IPv4), none twice, no empty
// item. "" is no prefixes. Spaces around an item are allowed.
func parsePrefixes(s string) ([]netip.Prefix, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var out []netip.Prefix
	seen := map[netip.Prefix]bool{}
	for item := range strings.SplitSeq(s, ",") {
		item = strings.TrimSpace(item)
		p, err := netip.ParsePrefix(item)
		switch {
		case item == "":
			return nil, errors.New("an empty item in the list")
		case err != nil:
			return nil, fmt.Errorf("%q is not a CIDR prefix such as 10.0.0.0/8 or fd00::/8", item)
		case p.Addr().Is4In6():
			return nil, fmt.Errorf("%q: write an IPv4 prefix as IPv4", item)
		case p != p.Masked():
			return nil, fmt.Errorf("%q has host bits set; the prefix is %s", item, p.Masked())
		case seen[p]:
			return nil, fmt.Errorf("%q is listed twice", item)
		}
		seen[p] = true
		out = append(out, p)
	}
	return out, nil
}

// webhookConfig maps --webhook and --webhook-secret-file onto one subscription.
func webhookConfig(c *cli.Context, cfg *node.Config) error {
	url, file := c.String("webhook"), c.String("webhook-secret-file")
	if url == "" && file == "" {
		return nil
	}
	if url == "" || file == "" {
		return usageError(errors.New("--webhook and --webhook-secret-file go together"))
	}
	secret, err := os.ReadFile(file)
	if err != nil {
		return usageError(fmt.Errorf("reading --webhook-secret-file: %w", err))
	}
	cfg.Webhooks = []webhook.Subscription{{URL: url, Secret: strings.TrimSuffix(strings.TrimSuffix(string(secret), "\n"), "\r")}}
	return nil
}
