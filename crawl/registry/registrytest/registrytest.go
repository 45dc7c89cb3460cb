// Package registrytest serves a local stand-in for the official MCP registry,
// for tests and benchmarks of the harvest and of the crawl built on it.
//
// The fixture serves exactly the entries it is given, in order, ignoring the
// version=latest filter, so a test can present what an older or misbehaving
// registry sends (duplicate names, several versions). It records the query of
// every request and can inject the faults a harvest must survive: a page that
// fails once, a page that always fails, a repeated cursor, slow pages.
package registrytest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Entry is one server record of the registry.
type Entry struct {
	Name    string
	Title   string
	Version string
	// Description, Repository (sent as repository.url) and Website (sent
	// as websiteUrl) are sent when not empty.
	Description string
	Repository  string
	Website     string
	Remotes     []Remote
	// Packages are sent as packages[] (registryType, identifier, version,
	// transport, environmentVariables).
	Packages []Package
	// Status is active, deprecated or deleted; "" sends active.
	Status      string
	IsLatest    bool
	PublishedAt time.Time
	UpdatedAt   time.Time
}

// Package is one packages[] member.
type Package struct {
	RegistryType string // npm or pypi (anything else is sent as given)
	Identifier   string
	Version      string
	Transport    string   // "" sends stdio
	Env          []string // environmentVariables[].name
}

// Remote is one remotes[] member.
type Remote struct {
	Type string // streamable-http or sse (anything else is sent as given)
	URL  string
}

// Config sets page size and faults. Page numbers are 1-based; 0 means none.
type Config struct {
	// PageSize is the entries per page; default the request's limit (≤100).
	PageSize int
	// SnakeCursorEven sends the cursor as metadata.next_cursor on even
	// pages, as old registry builds did.
	SnakeCursorEven bool
	// FailOnce maps a page to a status that page answers with once.
	FailOnce map[int]int
	// FailAlways is a page that answers 500 every time.
	FailAlways int
	// RepeatCursorAt is a page (≥2) whose next cursor is the one it was
	// asked with, so the pagination would loop.
	RepeatCursorAt int
	// Latency delays every answer.
	Latency time.Duration
}

// Registry is a running fixture.
type Registry struct {
	URL string // base URL, without a trailing slash
	srv *httptest.Server
	cfg Config

	entries []json.RawMessage

	mu      sync.Mutex
	queries []url.Values // guarded by mu
	failed  map[int]bool // pages whose FailOnce fault was spent; guarded by mu
}

// Server starts a fixture serving servers with default paging and no faults.
// It is closed when the test ends.
func Server(tb testing.TB, servers []Entry) *Registry {
	return ServerWith(tb, servers, Config{})
}

// ServerWith starts a fixture with cfg.
func ServerWith(tb testing.TB, servers []Entry, cfg Config) *Registry {
	tb.Helper()
	r := &Registry{cfg: cfg, failed: map[int]bool{}}
	for _, e := range servers {
		b, err := json.Marshal(wire(e))
		if err != nil {
			tb.Fatalf("encoding registry entry %q: %v", e.Name, err)
		}
		r.entries = append(r.entries, b)
	}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	r.URL = r.srv.URL
	tb.Cleanup(r.srv.Close)
	return r
}

// Queries returns the query of every list request so far, in order.
func (r *Registry) Queries() []url.Values {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]url.Values(nil), r.queries...)
}

// Client is an HTTP client for the fixture.
func (r *Registry) Client() *http.Client { return r.srv.Client() }

func (r *Registry) serve(w http.ResponseWriter, req *http.Request) {
	if req.URL.Path != "/v0.1/servers" || req.Method != http.MethodGet {
		http.NotFound(w, req)
		return
	}
	q := req.URL.Query()
	r.mu.Lock()
	r.queries = append(r.queries, q)
	r.mu.Unlock()
	if r.cfg.Latency > 0 {
		time.Sleep(r.cfg.Latency)
	}
	offset, ok := decodeCursor(q.Get("cursor"))
	if !ok {
		http.Error(w, `{"title":"Bad Request","detail":"invalid cursor"}`, http.StatusBadRequest)
		return
	}
	size := r.pageSize(q.Get("limit"))
	pageNo := offset/size + 1
	if status := r.fault(pageNo); status != 0 {
		http.Error(w, `{"title":"fault injected"}`, status)
		return
	}
	r.writePage(w, pageNo, offset, size, q.Get("cursor"))
}

func (r *Registry) pageSize(limit string) int {
	if r.cfg.PageSize > 0 {
		return r.cfg.PageSize
	}
	n, err := strconv.Atoi(limit)
	if err != nil || n < 1 || n > 100 {
		return 30 // the registry's default
	}
	return n
}

// fault returns the status an injected fault answers page with, or 0.
func (r *Registry) fault(page int) int {
	if page == r.cfg.FailAlways {
		return http.StatusInternalServerError
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if st, ok := r.cfg.FailOnce[page]; ok && !r.failed[page] {
		r.failed[page] = true
		return st
	}
	return 0
}

func (r *Registry) writePage(w http.ResponseWriter, pageNo, offset, size int, cursor string) {
	end := min(offset+size, len(r.entries))
	servers := r.entries[min(offset, end):end]
	meta := map[string]any{"count": len(servers)}
	if end < len(r.entries) {
		next := encodeCursor(end)
		if pageNo == r.cfg.RepeatCursorAt && cursor != "" {
			next = cursor
		}
		key := "nextCursor"
		if r.cfg.SnakeCursorEven && pageNo%2 == 0 {
			key = "next_cursor"
		}
		meta[key] = next
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"servers": servers, "metadata": meta})
}

// Cursors look opaque on purpose, so a client that builds them itself fails.
func encodeCursor(offset int) string { return fmt.Sprintf("c-%x-z", offset) }

func decodeCursor(c string) (int, bool) {
	if c == "" {
		return 0, true
	}
	if !strings.HasPrefix(c, "c-") || !strings.HasSuffix(c, "-z") {
		return 0, false
	}
	n, err := strconv.ParseInt(c[2:len(c)-2], 16, 32)
	return int(n), err == nil && n >= 0
}

// wire is the registry's JSON shape of an entry.
func wire(e Entry) map[string]any {
	server := map[string]any{
		"$schema": "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json",
		"name":    e.Name,
		"version": e.Version,
	}
	for k, v := range map[string]string{"title": e.Title, "description": e.Description, "websiteUrl": e.Website} {
		if v != "" {
			server[k] = v
		}
	}
	if e.Repository != "" {
		server["repository"] = map[string]any{"url": e.Repository, "source": "github"}
	}
	if len(e.Remotes) > 0 {
		rs := make([]map[string]any, len(e.Remotes))
		for i, rm := range e.Remotes {
			rs[i] = map[string]any{"type": rm.Type, "url": rm.URL}
		}
		server["remotes"] = rs
	}
	if len(e.Packages) > 0 {
		ps := make([]map[string]any, len(e.Packages))
		for i, p := range e.Packages {
			tr := p.Transport
			if tr == "" {
				tr = "stdio"
			}
			env := make([]map[string]any, len(p.Env))
			for k, n := range p.Env {
				env[k] = map[string]any{"name": n, "isSecret": true}
			}
			ps[i] = map[string]any{"registryType": p.RegistryType, "identifier": p.Identifier,
				"version": p.Version, "transport": map[string]any{"type": tr}, "environmentVariables": env}
		}
		server["packages"] = ps
	}
	status := e.Status
	if status == "" {
		status = "active"
	}
	official := map[string]any{"status": status, "isLatest": e.IsLatest}
	if !e.PublishedAt.IsZero() {
		official["publishedAt"] = e.PublishedAt.UTC().Format(time.RFC3339Nano)
	}
	if !e.UpdatedAt.IsZero() {
		official["updatedAt"] = e.UpdatedAt.UTC().Format(time.RFC3339Nano)
	}
	return map[string]any{
		"server": server,
		"_meta":  map[string]any{"io.modelcontextprotocol.registry/official": official},
	}
}

// Generate makes n active, latest servers with one streamable-http remote
// each, spread round-robin over bases (scheme://host[:port] URLs): server i
// is named "io.example.gen/server-<i>" and its endpoint is
// "<base>/mcp/<i>", with i zero-padded to six digits.
func Generate(n int, bases []string) []Entry {
	if len(bases) == 0 {
		return nil
	}
	out := make([]Entry, n)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range out {
		id := fmt.Sprintf("%06d", i)
		out[i] = Entry{
			Name:        "io.example.gen/server-" + id,
			Version:     "1.0.0",
			Remotes:     []Remote{{Type: "streamable-http", URL: strings.TrimRight(bases[i%len(bases)], "/") + "/mcp/" + id}},
			IsLatest:    true,
			PublishedAt: t0.Add(time.Duration(i) * time.Second),
			UpdatedAt:   t0.Add(time.Duration(i) * time.Second),
		}
	}
	return out
}
