package node

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/histor-observer/histor/crawl"
	"github.com/histor-observer/histor/crawl/state"
	"github.com/histor-observer/histor/internal/httpx"
	hlog "github.com/histor-observer/histor/log"
	"github.com/histor-observer/histor/log/keys"
	"github.com/histor-observer/histor/node/catalog"
	"github.com/histor-observer/histor/node/federation"
	"github.com/histor-observer/histor/node/notify"
	"github.com/histor-observer/histor/node/pkgruns"
	"github.com/histor-observer/histor/node/receipts"
	"github.com/histor-observer/histor/node/schedule"
)

// Version is reported by /health.
var Version = "0.1.0-dev"

// Node is one observer: its keys and the parts it owns — the log, the crawl
// state, the crawler and its crawls — and its HTTP API over them.
//
// Lifecycle: New (validate, load or create the seed), then Run — or Open,
// Serve and Close separately, or CrawlOnce. Open opens the parts in order
// and Close stops them in reverse, so every part may use the ones before it
// for as long as it is open.
type Node struct {
	cfg     Config
	id      identity
	metrics *httpMetrics

	mu      sync.Mutex // guards the parts below and serializes Open and Close
	opened  []part     // the parts open now, in the order they opened
	log     *hlog.Log  // nil until Open
	state   *state.Store
	cr      *crawl.Crawler
	catalog *catalog.Catalog
	crawls  *schedule.Crawls
	// sbx is the sandbox part (node/pkgruns); nil when it is off. Atomic so
	// the crawl part, opened before it, can ask it for a round.
	sbx atomic.Pointer[pkgruns.Part]
	// api is read on every request, so it is an atomic rather than under mu;
	// nil before Open and after Close.
	api atomic.Pointer[api]

	// slots holds one token per request being worked on (MaxInFlight).
	slots chan struct{}
	busy  busyLog
	// serving is read-held by every request while it uses the API, and
	// write-held by Close, so no part is closed under a request.
	serving sync.RWMutex

	fed *federation.Federation // the federation's keys and parts (node/federation)

	// ready is closed (once, by readyOnce) when Serve first answers on its listener.
	ready     chan struct{}
	readyOnce sync.Once

	events   *notify.Part     // security events and their derivation (node/notify); nil until Open
	webhooks *notify.Webhooks // webhook deliveries (node/notify); nil without subscriptions
	// receipts is the receipts log (node/receipts); nil until Open; guarded
	// by mu.
	receipts *receipts.Log
}

// New validates cfg, creates DataDir if needed and loads the seed
// (generating it on first start). It opens nothing; Open registers the
// node's metrics and Close unregisters them.
func New(cfg Config) (*Node, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("creating data directory: %w", err)
	}
	seed, err := loadOrGenerateSeed(cfg.SeedFile, cfg.Logger)
	if err != nil {
		return nil, err
	}
	id, err := newIdentity(cfg, seed)
	if err != nil {
		return nil, err
	}
	fed := newFederation(cfg, id, seed)
	return &Node{cfg: cfg, id: id, metrics: newHTTPMetrics(), slots: make(chan struct{}, cfg.MaxInFlight), fed: fed,
		ready: make(chan struct{})}, nil
}

func loadOrGenerateSeed(path string, logger *slog.Logger) (*keys.Seed, error) {
	seed, err := keys.Load(path)
	if errors.Is(err, fs.ErrNotExist) {
		logger.Info("generating node seed", "path", path)
		seed, err = keys.Generate(path)
	}
	if err != nil {
		return nil, fmt.Errorf("loading node seed: %w", err)
	}
	return seed, nil
}

// LogDir is where the node keeps its Pebble log: DataDir/log.
func (n *Node) LogDir() string { return filepath.Join(n.cfg.DataDir, "log") }

// StateDir is where the node keeps its crawl state: DataDir/state.
func (n *Node) StateDir() string { return filepath.Join(n.cfg.DataDir, "state") }

// ReceiptsDir is where the node keeps its receipts log: DataDir/receipts,
// a Pebble store of its own beside the label log, so neither log's keys,
// heads or checks know of the other.
func (n *Node) ReceiptsDir() string { return filepath.Join(n.cfg.DataDir, "receipts") }

// DID is the did:key of the node's log key.
func (n *Node) DID() string { return n.id.did }

// Open opens the node's parts in order: its metrics (registered with
// Config.Registry), the log (a new one signs its size-0 head), the crawl
// state, the crawler, its crawls, and last the API. If one fails, those
// already open are closed again. A log that fails its start-up checks is
// never served.
func (n *Node) Open(ctx context.Context) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.opened != nil {
		return nil
	}
	opened, err := openParts(ctx, n.parts())
	if err != nil {
		return err
	}
	n.opened = opened
	return nil
}

// Log is the opened log (nil before Open), for the parts of the node that
// append to it.
func (n *Node) Log() *hlog.Log {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.log
}

// Handler is the node's HTTP API. Before Open and after Close it answers
// 503 to everything, and so it does to a request beyond MaxInFlight but
// /health and /metrics, which probes and scrapers must reach while the node
// is busy. Whatever part of a request body the answer left unread is read
// and discarded within LingerBytes and LingerTimeout, so that a client that
// writes its whole body before reading is shown the 413 or 503 it was sent.
func (n *Node) Handler() http.Handler {
	linger := httpx.Linger{MaxBytes: n.cfg.LingerBytes, Timeout: n.cfg.LingerTimeout}
	return linger.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &httpx.StatusWriter{ResponseWriter: w}
		n.metrics.inFlight.Inc()
		var m *httpx.Match
		defer func() {
			n.metrics.inFlight.Dec()
			n.metrics.observe(m, sw.Status(), time.Since(start))
		}()
		peeked := n.api.Load()
		if peeked != nil {
			m = peeked.router.Lookup(r) // for the in-flight bound and the metrics label
		}
		if m == nil || !m.Unbounded {
			select {
			case n.slots <- struct{}{}:
				defer func() { <-n.slots }()
			default:
				n.busy.refused(n.cfg.Logger, cap(n.slots))
				sw.Header().Set("Retry-After", "1")
				writeDetail(sw, http.StatusServiceUnavailable, fmt.Sprintf("busy: %d requests in flight", cap(n.slots)))
				return
			}
		}
		n.serving.RLock()
		defer n.serving.RUnlock()
		h := n.api.Load()
		if h == nil {
			writeDetail(sw, http.StatusServiceUnavailable, "log not open")
			return
		}
		if peeked != h {
			m = h.router.Lookup(r) // reopened meanwhile: serve with the handlers of this api
		}
		h.serve(sw, r, m)
	}))
}

// Run opens the node's parts, listens on HTTPAddr and serves until ctx is
// done; then it shuts the server down gracefully and stops the parts in
// reverse order: the crawls (cancelled and waited for), the crawler, the
// crawl state, the log.
func (n *Node) Run(ctx context.Context) error {
	if err := n.Open(ctx); err != nil {
		return err
	}
	defer n.Close()
	ln, err := net.Listen("tcp", n.cfg.HTTPAddr)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", n.cfg.HTTPAddr, err)
	}
	return n.Serve(ctx, ln)
}

// Serve serves the API on ln until ctx is done, then lets requests in flight
// finish for up to ShutdownTimeout. With a CrawlInterval it also starts the
// crawl schedule, which runs until Close. The node must be open.
func (n *Node) Serve(ctx context.Context, ln net.Listener) error {
	if n.api.Load() == nil {
		ln.Close()
		return errors.New("serving: log not open")
	}
	// The face is a target before the schedule starts, so the first crawl reads it too.
	if n.cfg.ObserveOwnFace {
		if err := n.observeOwnFace(ln.Addr()); err != nil {
			ln.Close()
			return err
		}
	}
	if n.cfg.CrawlInterval > 0 {
		n.mu.Lock()
		if n.crawls != nil {
			n.crawls.Every(n.cfg.CrawlInterval)
		}
		n.mu.Unlock()
	}
	srv := n.server(n.Handler())
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	n.cfg.Logger.Info("serving", "addr", ln.Addr().String(), "origin", n.cfg.LogOrigin, "did", n.id.did,
		"profile", n.cfg.Profile, "crawl_interval", n.cfg.CrawlInterval)
	n.readyOnce.Do(func() { close(n.ready) })
	select {
	case err := <-errc:
		return fmt.Errorf("serving http: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), n.cfg.ShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("shutting down http: %w", err)
	}
	return nil
}

// Ready is closed once Serve answers requests on its listener: the node is open and
// listening (its listener accepted connections before that, queued by the kernel).
func (n *Node) Ready() <-chan struct{} { return n.ready }

// CrawlOnce opens the node's parts, runs one crawl in the foreground
// (appending its labels and signing a head), and closes the parts again. It
// serves nothing; the node must not be serving from the same DataDir. The
// summary is returned even with an error when some targets were processed.
func (n *Node) CrawlOnce(ctx context.Context) (*crawl.Summary, error) {
	if err := n.Open(ctx); err != nil {
		return nil, err
	}
	defer n.Close()
	n.mu.Lock()
	run := n.crawlAndReload()
	n.mu.Unlock()
	return run(ctx)
}

func (n *Node) server(h http.Handler) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: n.cfg.ReadHeaderTimeout,
		ReadTimeout:       n.cfg.ReadTimeout,
		WriteTimeout:      n.cfg.WriteTimeout,
		IdleTimeout:       n.cfg.IdleTimeout,
		MaxHeaderBytes:    n.cfg.MaxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(n.cfg.Logger.Handler(), slog.LevelWarn),
	}
}

// Close stops the parts in reverse order of opening: the API first, once
// the requests still using it have finished (a request's writes are bounded
// by WriteTimeout), so later requests are answered 503; then the crawls,
// cancelled and waited for; then the crawler, the crawl state, the log and
// the metrics (unregistered). It is safe to call more than once.
func (n *Node) Close() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	err := closeParts(n.opened)
	n.opened = nil
	return err
}

// now is the node's clock.
func (n *Node) now() time.Time {
	if n.cfg.Now != nil {
		return n.cfg.Now()
	}
	return time.Now()
}

// newAPI builds the handler over any Log; the node adds its crawls and
// metrics.
func newAPI(l Log, issuer []byte, cfg Config) *api {
	a := &api{
		log:        l,
		issuer:     issuer,
		maxEntries: uint64(cfg.MaxEntries),
		version:    Version,
		profile:    cfg.Profile,
		operator:   newOperatorToken(cfg.OperatorToken),
		logger:     cfg.Logger,
	}
	a.router = httpx.NewRouter(a.routes())
	return a
}

// identity is the node's keys and what it says about them.
type identity struct {
	logKey      ed25519.PrivateKey
	did         string
	logVkey     string
	witnessVkey string
	issuerDoc   []byte // the /api/v1/issuer answer, rendered by Open
	// aimarketKey signs the AIMarket peer's documents, answers and receipts
	// (node/aimarket); not the log key, as HISTOR keeps the two apart.
	aimarketKey ed25519.PrivateKey
}
