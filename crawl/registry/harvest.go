package registry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// DefaultBase is the official MCP registry.
const DefaultBase = "https://registry.modelcontextprotocol.io"

// pageLimit is the largest page the registry serves.
const pageLimit = 100

// Options bound and tune a harvest. The zero value is usable.
type Options struct {
	// MaxPages bounds the pagination; default 1000 (the registry had ~355
	// pages of 100 in late 2026). A loop is caught earlier by the
	// repeated-cursor check; this stops a registry inventing cursors forever.
	MaxPages int
	// MaxPageBytes bounds one page body; default 16 MiB.
	MaxPageBytes int64
	// MaxServers bounds the server entries read over all pages; default 200,000.
	MaxServers int
	// Attempts per page, counting the first; default 5. Only 5xx, 429 and
	// transport errors are retried.
	Attempts int
	// RetryDelay is the first pause between attempts, doubled each time up
	// to MaxRetryDelay; defaults 2 s and 30 s. A Retry-After header is
	// honoured up to MaxRetryDelay.
	RetryDelay    time.Duration
	MaxRetryDelay time.Duration
	// UserAgent names the crawler; empty sends Go's default.
	UserAgent string
	// OptOut marks covered targets Skip "opt-out"; nil covers nothing.
	OptOut *OptOut
	// Logger receives progress; nil discards it.
	Logger *slog.Logger
}

// Defaults of Options' bounds.
const (
	DefaultMaxPages     = 1000
	DefaultMaxPageBytes = 16 << 20
	DefaultMaxServers   = 200_000
)

func (o Options) withDefaults() Options {
	if o.MaxPages <= 0 {
		o.MaxPages = DefaultMaxPages
	}
	if o.MaxPageBytes <= 0 {
		o.MaxPageBytes = DefaultMaxPageBytes
	}
	if o.MaxServers <= 0 {
		o.MaxServers = DefaultMaxServers
	}
	if o.Attempts <= 0 {
		o.Attempts = 5
	}
	if o.RetryDelay <= 0 {
		o.RetryDelay = 2 * time.Second
	}
	if o.MaxRetryDelay <= 0 {
		o.MaxRetryDelay = 30 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

// Result is what a harvest read from the registry. (The type cannot share
// the name of the Harvest function that makes it.)
type Result struct {
	Targets []Target
	// Servers is the number of distinct server names kept, with or
	// without an observable remote.
	Servers int
	// Complete is true only if the last page ended without error; Delist
	// acts only on complete harvests.
	Complete bool
	// Pages is the number of pages read successfully.
	Pages int
	// Malformed counts server entries skipped because they could not be
	// decoded or had no usable name.
	Malformed int
}

// page is one list response. Old registry builds spelled the cursor
// next_cursor; both spellings are read, in metadata and at the top level.
type page struct {
	Servers  []json.RawMessage `json:"servers"`
	Metadata struct {
		NextCursor      string `json:"nextCursor"`
		NextCursorSnake string `json:"next_cursor"`
	} `json:"metadata"`
	NextCursorSnake string `json:"next_cursor"`
}

func (p *page) next() string {
	for _, c := range []string{p.Metadata.NextCursor, p.Metadata.NextCursorSnake, p.NextCursorSnake} {
		if c != "" {
			return c
		}
	}
	return ""
}

// Harvest reads every page of <base>/v0.1/servers and returns the targets.
//
// On error it still returns what was read, with Complete false, so a caller
// may crawl the targets it has while knowing not to delist anything.
func Harvest(ctx context.Context, client *http.Client, base string, opts Options) (*Result, error) {
	opts = opts.withDefaults()
	if client == nil {
		client = http.DefaultClient
	}
	h := &harvester{ctx: ctx, client: client, base: strings.TrimRight(base, "/"), opts: opts}
	err := h.run()
	byName := selectLatest(h.records)
	res := &Result{
		Targets:   targets(byName, opts.OptOut),
		Servers:   len(byName),
		Complete:  err == nil,
		Pages:     h.pages,
		Malformed: h.malformed,
	}
	if err != nil {
		return res, fmt.Errorf("harvesting registry %s: %w", base, err)
	}
	opts.Logger.Info("registry harvested", "pages", res.Pages, "servers", res.Servers, "targets", len(res.Targets))
	return res, nil
}

type harvester struct {
	ctx       context.Context
	client    *http.Client
	base      string
	opts      Options
	records   []*record
	entries   int
	pages     int
	malformed int
}

func (h *harvester) run() error {
	seen := map[string]bool{}
	cursor := ""
	for n := 1; n <= h.opts.MaxPages; n++ {
		p, err := h.fetch(n, cursor)
		if err != nil {
			return err
		}
		h.pages++
		if err := h.add(p.Servers); err != nil {
			return err
		}
		next := p.next()
		if next == "" {
			return nil
		}
		if seen[next] || next == cursor {
			return fmt.Errorf("after page %d: %w", n, ErrRepeatedCursor)
		}
		seen[next] = true
		cursor = next
		if n%50 == 0 {
			h.opts.Logger.Info("registry harvest progress", "pages", n, "entries", h.entries)
		}
	}
	return fmt.Errorf("%w (%d)", ErrTooManyPages, h.opts.MaxPages)
}

// add decodes each entry on its own so one malformed entry costs only itself.
func (h *harvester) add(raw []json.RawMessage) error {
	for _, m := range raw {
		h.entries++
		if h.entries > h.opts.MaxServers {
			return fmt.Errorf("%w (%d)", ErrTooManyServers, h.opts.MaxServers)
		}
		r := new(record)
		if err := json.Unmarshal(m, r); err != nil || !validName(r.Server.Name) {
			h.malformed++
			continue
		}
		r.compact()
		h.records = append(h.records, r)
	}
	return nil
}

func (h *harvester) pageURL(cursor string) string {
	q := url.Values{}
	q.Set("version", "latest")
	q.Set("limit", strconv.Itoa(pageLimit))
	if cursor != "" {
		q.Set("cursor", cursor) // opaque: sent back exactly as received
	}
	return h.base + "/v0.1/servers?" + q.Encode()
}

// fetch gets one page, retrying what is worth retrying.
func (h *harvester) fetch(n int, cursor string) (*page, error) {
	u := h.pageURL(cursor)
	delay := h.opts.RetryDelay
	for attempt := 1; ; attempt++ {
		p, status, wait, err := h.get(u)
		if err == nil {
			return p, nil
		}
		var perm *permanent
		if errors.As(err, &perm) || attempt == h.opts.Attempts || h.ctx.Err() != nil {
			return nil, &PageError{Page: n, URL: u, Status: status, Err: err}
		}
		if wait <= 0 {
			wait = delay
		}
		h.opts.Logger.Warn("registry page failed, retrying", "page", n, "attempt", attempt, "status", status, "err", err)
		if err := sleep(h.ctx, min(wait, h.opts.MaxRetryDelay)); err != nil {
			return nil, &PageError{Page: n, URL: u, Status: status, Err: err}
		}
		delay = min(delay*2, h.opts.MaxRetryDelay)
	}
}

// permanent marks a failure retrying cannot fix.
type permanent struct{ err error }

func (p *permanent) Error() string { return p.err.Error() }
func (p *permanent) Unwrap() error { return p.err }

// get makes one attempt. It returns the HTTP status (0 if none), the pause
// the server asked for in Retry-After, and an error wrapped in *permanent
// when retrying is pointless.
func (h *harvester) get(u string) (*page, int, time.Duration, error) {
	req, err := http.NewRequestWithContext(h.ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, 0, 0, &permanent{fmt.Errorf("building request: %w", err)}
	}
	req.Header.Set("Accept", "application/json")
	if h.opts.UserAgent != "" {
		req.Header.Set("User-Agent", h.opts.UserAgent)
	}
	resp, err := h.client.Do(req)
	if err != nil {
		return nil, 0, 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests {
		return nil, resp.StatusCode, retryAfter(resp.Header.Get("Retry-After")), errors.New("server busy or failing")
	}
	if resp.StatusCode != http.StatusOK {
		return nil, resp.StatusCode, 0, &permanent{fmt.Errorf("unexpected status %s", resp.Status)}
	}
	p, err := h.decode(resp.Body)
	return p, resp.StatusCode, 0, err
}

func (h *harvester) decode(body io.Reader) (*page, error) {
	b, err := io.ReadAll(io.LimitReader(body, h.opts.MaxPageBytes+1))
	if err != nil {
		return nil, fmt.Errorf("reading page body: %w", err)
	}
	if int64(len(b)) > h.opts.MaxPageBytes {
		return nil, &permanent{fmt.Errorf("%w (%d bytes)", ErrPageTooLarge, h.opts.MaxPageBytes)}
	}
	p := new(page)
	if err := json.Unmarshal(b, p); err != nil {
		return nil, &permanent{fmt.Errorf("decoding page: %w", err)}
	}
	return p, nil
}

// retryAfter reads a Retry-After header given in seconds; dates and junk
// read as no preference.
func retryAfter(v string) time.Duration {
	s, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || s < 0 {
		return 0
	}
	return time.Duration(s) * time.Second
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
