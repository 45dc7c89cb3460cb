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

	hlog "github.com/histor-observer/histor/log"
	"github.com/histor-observer/histor/log/cmalloc"
	"github.com/histor-observer/histor/log/keys"
)

// Version is reported by /health.
var Version = "0.1.0-dev"

// Node is one observer: its keys, its log and its HTTP API.
//
// Lifecycle: New (validate, load or create the seed), then Run — or Open and
// Serve separately — then Close.
type Node struct {
	cfg Config
	id  identity

	mu  sync.Mutex // guards log and serializes Open and Close
	log *hlog.Log  // nil until Open
	// api is read on every request, so it is an atomic rather than under mu;
	// nil before Open and after Close.
	api atomic.Pointer[api]

	// slots holds one token per request being worked on (MaxInFlight).
	slots chan struct{}
	busy  busyLog
	// serving is read-held by every request while it uses the API, and
	// write-held by Close, so the log is never closed under a request.
	serving sync.RWMutex
}

// New validates cfg, creates DataDir if needed and loads the seed, generating
// it on first start. It does not open the log.
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
	// The log's block cache lives in C memory under cgo; see log/cmalloc.
	if !cmalloc.Tune(cmalloc.DefaultMmapThreshold, cmalloc.DefaultMaxMmaps) {
		cfg.Logger.Debug("C allocator left as it is", "operator_tuned", cmalloc.OperatorTuned())
	}
	return &Node{cfg: cfg, id: id, slots: make(chan struct{}, cfg.MaxInFlight)}, nil
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

// DID is the did:key of the node's log key.
func (n *Node) DID() string { return n.id.did }

// Open opens the log (a new one signs its size-0 head) and builds the API.
// A log that fails its start-up checks is never served.
func (n *Node) Open(ctx context.Context) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.log != nil {
		return nil
	}
	l, err := hlog.Open(ctx, hlog.Config{
		Dir:        n.LogDir(),
		Origin:     n.cfg.LogOrigin,
		Key:        n.id.logKey,
		DID:        n.id.did,
		Logger:     n.cfg.Logger,
		CacheBytes: n.cfg.CacheBytes,
		Now:        n.cfg.Now,
	})
	if err != nil {
		return fmt.Errorf("opening log: %w", err)
	}
	h := newAPI(l, n.id.issuerDoc, n.cfg)
	if h.check, err = newChecker(n.cfg, n.id.logKey, n.id.did); err != nil {
		l.Close()
		return err
	}
	n.log = l
	n.api.Store(h)
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
// /health, which a liveness probe must reach while the node is busy.
func (n *Node) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/health" {
			select {
			case n.slots <- struct{}{}:
				defer func() { <-n.slots }()
			default:
				n.busy.refused(n.cfg.Logger, cap(n.slots))
				w.Header().Set("Retry-After", "1")
				writeDetail(w, http.StatusServiceUnavailable, fmt.Sprintf("busy: %d requests in flight", cap(n.slots)))
				return
			}
		}
		n.serving.RLock()
		defer n.serving.RUnlock()
		h := n.api.Load()
		if h == nil {
			writeDetail(w, http.StatusServiceUnavailable, "log not open")
			return
		}
		h.ServeHTTP(w, r)
	})
}

// Run opens the log, listens on HTTPAddr and serves until ctx is done, then
// shuts down gracefully and closes the log.
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
// finish for up to ShutdownTimeout. The log must be open.
func (n *Node) Serve(ctx context.Context, ln net.Listener) error {
	if n.api.Load() == nil {
		ln.Close()
		return errors.New("serving: log not open")
	}
	srv := n.server(n.Handler())
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	n.cfg.Logger.Info("serving", "addr", ln.Addr().String(), "origin", n.cfg.LogOrigin, "did", n.id.did)
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

// Close closes the log once the requests still using it have finished (a
// request's writes are bounded by WriteTimeout); later requests are answered
// 503. It is safe to call more than once.
func (n *Node) Close() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.log == nil {
		return nil
	}
	n.serving.Lock()
	n.api.Store(nil)
	n.serving.Unlock()
	err := n.log.Close()
	n.log = nil
	if err != nil {
		return fmt.Errorf("closing log: %w", err)
	}
	return nil
}

// newAPI builds the handler over any Log.
func newAPI(l Log, issuer []byte, cfg Config) *api {
	return &api{
		log:        l,
		issuer:     issuer,
		maxEntries: uint64(cfg.MaxEntries),
		version:    Version,
		logger:     cfg.Logger,
		crawl:      cfg.CrawlStatus,
	}
}

// identity is the node's keys and what it says about them.
type identity struct {
	logKey    ed25519.PrivateKey
	did       string
	issuerDoc []byte // the /api/v1/issuer answer
}
