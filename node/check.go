package node

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/histor-observer/histor/crawl/mcpclient"
	"github.com/histor-observer/histor/crawl/scan"
	"github.com/histor-observer/histor/internal/httpx"
	"github.com/histor-observer/histor/log/canon"
	"github.com/histor-observer/histor/log/mtl"
	"github.com/histor-observer/histor/node/ratelimit"
)

// CheckType is the type member of every /check answer; it is inside the
// signed bytes, so an answer can never pass for a tree head or a label.
const CheckType = "histor.check/v1"

// Bounds of a /check request, HISTOR's.
const (
	maxCheckBytes     = 2 << 20 // a body beyond this is answered 413
	maxCheckTextChars = 2000    // endpoint and name, in characters
	maxCheckTools     = mcpclient.DefaultMaxTools
)

// ClientReports keeps what contribute:true adds: one more count of
// (target, tool-set digest, UTC day), nothing about the caller.
// *state.Store satisfies it.
type ClientReports interface {
	AddClientReport(target, digest, day string) error
}

// checker answers POST /api/v1/check. One is built per opened API; its
// limiters, scan slot and scan cache live as long as it does.
type checker struct {
	key      ed25519.PrivateKey
	did      string
	base     string // PublicURL, "" for relative links
	targets  CheckTargets
	reports  ClientReports
	patterns *scan.PatternSet
	view     peerView // nil: no peer view
	limits   scan.Limits
	trusted  []netip.Prefix
	now      func() time.Time
	logger   *slog.Logger

	checks      *ratelimit.Limiter[httpx.ClientKey] // nil: no limit
	scans       *ratelimit.Limiter[httpx.ClientKey] // nil: no fresh scans at all
	contributed *ratelimit.Limiter[reportKey]
	// contributors bounds the targets one client may count for a day, so a
	// few addresses cannot fill the contributed table (whose overflow is
	// shared) and so switch contributions off for everyone.
	contributors *ratelimit.Limiter[httpx.ClientKey]
	slot         chan struct{} // one fresh scan at a time for the whole node
	cache        *scanCache
}

// reportKey limits contributions to one per client, target and day, so one
// caller cannot mint any number of "clients" in the public count.
type reportKey struct {
	client httpx.ClientKey
	target string
}

// newChecker builds the /check handler's state from a validated Config.
// ContributionsPerClientDay is the most targets one client's contributions
// count for in any 24 hours. With MaxCheckClients (client, target) pairs
// tracked, filling that table takes MaxCheckClients/ContributionsPerClientDay
// distinct clients in a day.
const ContributionsPerClientDay = 50

// checkSources are the node's parts /check reads: its targets (the
// catalog), where contributions are counted, and the pattern set a fresh
// scan uses (the crawler's).
type checkSources struct {
	targets  CheckTargets
	reports  ClientReports
	patterns *scan.PatternSet
	view     peerView
}

// peerView gives the observers and agreement members of a server id
// (node/peers' Store.Members).
type peerView func(id string) (observers []any, agreement map[string]any, err error)

func newChecker(cfg Config, key ed25519.PrivateKey, did string, src checkSources) (*checker, error) {
	c := &checker{
		key: key, did: did, base: strings.TrimSuffix(cfg.PublicURL, "/"),
		targets: src.targets, reports: src.reports, patterns: src.patterns, view: src.view,
		limits: scan.DefaultLimits, trusted: cfg.TrustedProxies, now: cfg.Now, logger: cfg.Logger,
		slot: make(chan struct{}, 1), cache: newScanCache(maxCachedScanBytes),
	}
	if c.now == nil {
		c.now = time.Now
	}
	var err error
	limit := func(n int, w time.Duration) ratelimit.Config {
		return ratelimit.Config{Events: n, Window: w, MaxKeys: cfg.MaxCheckClients}
	}
	if cfg.ChecksPerMinute > 0 {
		if c.checks, err = ratelimit.New[httpx.ClientKey](limit(cfg.ChecksPerMinute, time.Minute)); err != nil {
			return nil, fmt.Errorf("making check limiter: %w", err)
		}
	}
	if cfg.ScansPerHour > 0 {
		if c.scans, err = ratelimit.New[httpx.ClientKey](limit(cfg.ScansPerHour, time.Hour)); err != nil {
			return nil, fmt.Errorf("making scan limiter: %w", err)
		}
	}
	if c.contributed, err = ratelimit.New[reportKey](limit(1, 24*time.Hour)); err != nil {
		return nil, fmt.Errorf("making contribution limiter: %w", err)
	}
	if c.contributors, err = ratelimit.New[httpx.ClientKey](limit(ContributionsPerClientDay, 24*time.Hour)); err != nil {
		return nil, fmt.Errorf("making contributor limiter: %w", err)
	}
	return c, nil
}

// serveCheck answers POST /api/v1/check and its CORS preflight.
func (a *api) serveCheck(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	// Any origin may ask: no credentials are ever read, the answer is public.
	h.Set("Access-Control-Allow-Origin", "*")
	switch r.Method {
	case http.MethodOptions:
		h.Set("Access-Control-Allow-Methods", "POST, OPTIONS")
		h.Set("Access-Control-Allow-Headers", "Content-Type")
		h.Set("Access-Control-Max-Age", "86400")
		w.WriteHeader(http.StatusNoContent)
		return
	case http.MethodPost:
	default:
		h.Set("Allow", "POST, OPTIONS")
		a.fail(w, http.StatusMethodNotAllowed, "method not allowed")
		return
	}
	c := a.check
	if c == nil || c.targets == nil {
		h.Set("Retry-After", "3600")
		a.fail(w, http.StatusServiceUnavailable, "check is not available: this node has no crawl state")
		return
	}
	c.serve(a, w, r)
}

func (c *checker) serve(a *api, w http.ResponseWriter, r *http.Request) {
	addr, ok := httpx.ClientAddr(r, c.trusted)
	if !ok {
		a.fail(w, http.StatusBadRequest, "unreadable client address")
		return
	}
	client := httpx.KeyOf(addr)
	// Counted before the body is read: a flood of 2 MiB bodies costs the
	// node one map lookup each.
	if ok, retry := c.allowCheck(client); !ok {
		w.Header().Set("Retry-After", httpx.RetryAfter(retry))
		a.fail(w, http.StatusTooManyRequests, "too many checks; slow down")
		return
	}
	raw, status, err := httpx.ReadBody(w, r, maxCheckBytes)
	if err != nil {
		a.fail(w, status, err.Error())
		return
	}
	q, err := parseCheckQuery(raw)
	if err != nil {
		a.fail(w, http.StatusBadRequest, err.Error())
		return
	}
	doc, err := c.answer(q, client, a.log)
	if err != nil {
		a.internal(w, r, "answering check", err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	writeBody(w, "application/json", doc)
}

// allowCheck counts one check against client's limit, if there is one.
func (c *checker) allowCheck(client httpx.ClientKey) (bool, time.Duration) {
	if c.checks == nil {
		return true, 0
	}
	return c.checks.Allow(client)
}

// checkQuery is one parsed /check request.
type checkQuery struct {
	endpoint, name string // as sent; "" when absent
	// digest is the client's tool-set digest, computed from tools or sent
	// as toolSetDigest; "" when neither gave one.
	digest string
	// entries are the client's tools as MTL/1 normalises them (what a scan
	// reads); nil unless tools were sent and digested.
	entries []any
	// digestErr says why the tools sent have no digest; nil otherwise.
	digestErr  map[string]any
	contribute bool
}

// parseCheckQuery reads a body with the strict canonical parser: the tools
// are digested from the client's exact JSON, as MTL/1 requires, so a number
// the profile refuses is an undigestible set rather than a rounded one.
func parseCheckQuery(raw []byte) (*checkQuery, error) {
	if len(raw) == 0 {
		raw = []byte("{}")
	}
	v, err := canon.ParseDeferringNumbers(raw, canon.Limits{MaxDepth: canon.DefaultLimits.MaxDepth, MaxBytes: maxCheckBytes})
	if err != nil {
		return nil, fmt.Errorf("body is not JSON the canonical parser accepts: %w", err)
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, errors.New("body must be a JSON object")
	}
	q := &checkQuery{}
	if q.endpoint, err = checkText(m, "endpoint"); err != nil {
		return nil, err
	}
	if q.name, err = checkText(m, "name"); err != nil {
		return nil, err
	}
	if q.endpoint == "" && q.name == "" {
		return nil, errors.New("send endpoint or name")
	}
	if err := q.readTools(m); err != nil {
		return nil, err
	}
	q.contribute = m["contribute"] == true
	return q, nil
}

// checkText reads an optional string member; null counts as absent.
func checkText(m map[string]any, field string) (string, error) {
	v, ok := m[field]
	if !ok || v == nil {
		return "", nil
	}
	s, ok := v.(string)
	if !ok || strings.IndexByte(s, 0) >= 0 || utf8.RuneCountInString(s) > maxCheckTextChars {
		return "", fmt.Errorf("%s must be a string of at most %d characters", field, maxCheckTextChars)
	}
	return s, nil
}

// readTools takes the client's digest from tools (digested exactly as the
// crawl digests a tools/list result) or else from toolSetDigest.
func (q *checkQuery) readTools(m map[string]any) error {
	if v := m["tools"]; v != nil {
		tools, ok := v.([]any)
		if !ok {
			return errors.New("tools must be the tools array of a tools/list result")
		}
		if len(tools) > maxCheckTools {
			return fmt.Errorf("more than %d tools", maxCheckTools)
		}
		return q.digestTools(tools)
	}
	if v := m["toolSetDigest"]; v != nil {
		d, ok := v.(string)
		if !ok || !mtl.ValidSRI(d) {
			return errors.New("toolSetDigest must be an MTL/1 tool-set digest (sha256-<base64>)")
		}
		q.digest = d
	}
	return nil
}

func (q *checkQuery) digestTools(tools []any) error {
	canonical, err := mtl.CanonicalToolSet(tools)
	var refusal *mtl.Refusal
	switch {
	case errors.As(err, &refusal):
		q.digestErr = map[string]any{"code": refusal.Code, "detail": refusal.Reason}
		return nil
	case err != nil:
		return fmt.Errorf("digesting tools: %w", err)
	}
	q.digest = mtl.SRI(canonical)
	// Normalize succeeded inside CanonicalToolSet, so it cannot fail here.
	q.entries, _ = mtl.Normalize(tools)
	return nil
}
