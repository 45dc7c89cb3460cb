package main

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// registry serves the fleet as the official MCP registry's v0.1 API does, in the shape
// crawl/registry/registrytest sends: GET /v0.1/servers?limit=&cursor=, pages of at most
// 100 entries (30 without a limit), an opaque metadata.nextCursor until the last page.
type registry struct {
	url     string
	srv     *http.Server
	entries []json.RawMessage
}

// startRegistry serves every endpoint of f on a loopback port.
func startRegistry(f *fleet) (*registry, error) {
	r := &registry{}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i, e := range f.endpoints() {
		b, err := json.Marshal(registryEntry(e, t0.Add(time.Duration(i)*time.Second)))
		if err != nil {
			return nil, fmt.Errorf("encoding the registry entry of %s: %w", e.name, err)
		}
		r.entries = append(r.entries, b)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listening for the registry: %w", err)
	}
	r.url = "http://" + ln.Addr().String()
	r.srv = &http.Server{Handler: http.HandlerFunc(r.serve), ReadHeaderTimeout: 10 * time.Second}
	go r.srv.Serve(ln)
	return r, nil
}

func (r *registry) close() error { return r.srv.Close() }

// registryEntry is the registry's JSON of one server with one streamable-http remote.
func registryEntry(e endpoint, published time.Time) map[string]any {
	return map[string]any{
		"server": map[string]any{
			"$schema": "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json",
			"name":    e.name,
			"version": "1.0.0",
			"remotes": []map[string]any{{"type": "streamable-http", "url": e.url}},
		},
		"_meta": map[string]any{"io.modelcontextprotocol.registry/official": map[string]any{
			"status": "active", "isLatest": true,
			"publishedAt": published.Format(time.RFC3339Nano), "updatedAt": published.Format(time.RFC3339Nano),
		}},
	}
}

func (r *registry) serve(w http.ResponseWriter, req *http.Request) {
	if req.URL.Path != "/v0.1/servers" || req.Method != http.MethodGet {
		http.NotFound(w, req)
		return
	}
	q := req.URL.Query()
	offset, ok := decodeCursor(q.Get("cursor"))
	if !ok {
		http.Error(w, `{"title":"Bad Request","detail":"invalid cursor"}`, http.StatusBadRequest)
		return
	}
	end := min(offset+pageSize(q.Get("limit")), len(r.entries))
	page := r.entries[min(offset, end):end]
	meta := map[string]any{"count": len(page)}
	if end < len(r.entries) {
		meta["nextCursor"] = encodeCursor(end)
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"servers": page, "metadata": meta})
}

func pageSize(limit string) int {
	n, err := strconv.Atoi(limit)
	if err != nil || n < 1 || n > 100 {
		return 30 // the registry's default
	}
	return n
}

// Cursors look opaque, as the registry's do, so a client that builds them itself fails.
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
