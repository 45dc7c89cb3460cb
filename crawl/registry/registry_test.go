package registry_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/histor-observer/histor/crawl/registry"
	"github.com/histor-observer/histor/crawl/registry/registrytest"
	"github.com/histor-observer/histor/log/clip"
	"github.com/histor-observer/histor/log/mtl"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// fast keeps retries quick in tests.
func fast() registry.Options {
	return registry.Options{RetryDelay: time.Millisecond, MaxRetryDelay: 5 * time.Millisecond}
}

func harvest(t *testing.T, r *registrytest.Registry, opts registry.Options) (*registry.Result, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return registry.Harvest(ctx, r.Client(), r.URL, opts)
}

func byEndpoint(ts []registry.Target) map[string]registry.Target {
	m := map[string]registry.Target{}
	for _, t := range ts {
		m[t.Endpoint] = t
	}
	return m
}

// The selection fixture: every rule of one-record-per-name and of remotes.
func selectionEntries() []registrytest.Entry {
	sh := func(u string) registrytest.Remote { return registrytest.Remote{Type: "streamable-http", URL: u} }
	return []registrytest.Entry{
		{Name: "io.a/plain", Title: "Plain", Version: "1.0.0", IsLatest: true, PublishedAt: t0,
			UpdatedAt: t0.Add(time.Hour), Remotes: []registrytest.Remote{sh("https://a.example/mcp")}},
		// Two versions; the isLatest one wins even though it is older.
		{Name: "io.b/versions", Version: "2.0.0", PublishedAt: t0.Add(48 * time.Hour),
			Remotes: []registrytest.Remote{sh("https://b.example/v2")}},
		{Name: "io.b/versions", Version: "1.5.0", IsLatest: true, PublishedAt: t0,
			Remotes: []registrytest.Remote{sh("https://b.example/v15")}},
		// Neither is latest: the newer publishedAt wins, whatever the order.
		{Name: "io.c/nolatest", Version: "3.0.0", PublishedAt: t0.Add(time.Hour),
			Remotes: []registrytest.Remote{sh("https://c.example/new")}},
		{Name: "io.c/nolatest", Version: "2.0.0", PublishedAt: t0,
			Remotes: []registrytest.Remote{sh("https://c.example/old")}},
		{Name: "io.d/deprecated", Status: "deprecated", IsLatest: true, PublishedAt: t0,
			Remotes: []registrytest.Remote{{Type: "sse", URL: "https://d.example/sse"}}},
		{Name: "io.e/deleted", Status: "deleted", IsLatest: true, PublishedAt: t0,
			Remotes: []registrytest.Remote{sh("https://e.example/mcp")}},
		{Name: "io.f/templated", IsLatest: true, PublishedAt: t0,
			Remotes: []registrytest.Remote{sh("https://{tenant}.f.example/mcp")}},
		// Five remotes, one stdio and one repeated: three targets.
		{Name: "io.g/many", IsLatest: true, PublishedAt: t0, Remotes: []registrytest.Remote{
			{Type: "stdio", URL: "https://g.example/stdio"},
			sh("https://g.example/1"), sh("https://g.example/1"),
			{Type: "sse", URL: "https://g.example/2"}, sh("https://g.example/3"), sh("https://g.example/4"),
		}},
		{Name: "io.h/optout", IsLatest: true, PublishedAt: t0, Remotes: []registrytest.Remote{
			sh("https://mcp.optout.example/mcp"), sh("https://h.example/private/mcp"), sh("https://h.example/privateer"),
		}},
		{Name: "io.i/noremotes", IsLatest: true, PublishedAt: t0},
		{Name: "", IsLatest: true, Remotes: []registrytest.Remote{sh("https://nameless.example/mcp")}},
	}
}

func TestHarvestSelection(t *testing.T) {
	r := registrytest.ServerWith(t, selectionEntries(), registrytest.Config{PageSize: 3, SnakeCursorEven: true})
	opts := fast()
	var err error
	opts.OptOut, err = registry.ParseOptOut([]byte("optout.example\nhttps://h.example/private # one path\n"))
	if err != nil {
		t.Fatal(err)
	}
	h, err := harvest(t, r, opts)
	if err != nil {
		t.Fatalf("Harvest: %v", err)
	}
	if !h.Complete || h.Pages != 4 || h.Servers != 9 || h.Malformed != 1 {
		t.Errorf("Complete=%v Pages=%d Servers=%d Malformed=%d, want true 4 9 1", h.Complete, h.Pages, h.Servers, h.Malformed)
	}
	got := byEndpoint(h.Targets)
	want := map[string]struct{ version, status, skip, transport string }{
		"https://a.example/mcp":          {"1.0.0", "active", "", "streamable-http"},
		"https://b.example/v15":          {"1.5.0", "active", "", "streamable-http"},
		"https://c.example/new":          {"3.0.0", "active", "", "streamable-http"},
		"https://d.example/sse":          {"", "deprecated", "", "sse"},
		"https://e.example/mcp":          {"", "deleted", "", "streamable-http"},
		"https://{tenant}.f.example/mcp": {"", "active", "templated-url", "streamable-http"},
		"https://g.example/1":            {"", "active", "", "streamable-http"},
		"https://g.example/2":            {"", "active", "", "sse"},
		"https://g.example/3":            {"", "active", "", "streamable-http"},
		"https://mcp.optout.example/mcp": {"", "active", "opt-out", "streamable-http"},
		"https://h.example/private/mcp":  {"", "active", "opt-out", "streamable-http"},
		"https://h.example/privateer":    {"", "active", "", "streamable-http"},
	}
	if len(got) != len(want) || len(h.Targets) != len(want) {
		t.Errorf("got %d targets (%d distinct), want %d: %v", len(h.Targets), len(got), len(want), h.Targets)
	}
	for ep, w := range want {
		g, ok := got[ep]
		if !ok {
			t.Errorf("no target for %s", ep)
			continue
		}
		if g.Version != w.version || g.RegistryStatus != w.status || g.Skip != w.skip || g.Transport != w.transport {
			t.Errorf("%s: version %q status %q skip %q transport %q, want %+v", ep, g.Version, g.RegistryStatus, g.Skip, g.Transport, w)
		}
		if g.ID != mtl.ServerID(g.Name, ep) {
			t.Errorf("%s: id %s is not mtl.ServerID", ep, g.ID)
		}
	}
	a := got["https://a.example/mcp"]
	if a.Title != "Plain" || !a.PublishedAt.Equal(t0) || !a.UpdatedAt.Equal(t0.Add(time.Hour)) {
		t.Errorf("a: title %q published %v updated %v", a.Title, a.PublishedAt, a.UpdatedAt)
	}
	for _, q := range r.Queries() {
		if q.Get("version") != "latest" || q.Get("limit") != "100" {
			t.Errorf("query %v lacks version=latest&limit=100", q)
		}
	}
}

func TestHarvestDeterministicOrder(t *testing.T) {
	r := registrytest.ServerWith(t, selectionEntries(), registrytest.Config{PageSize: 5})
	h1, err1 := harvest(t, r, fast())
	h2, err2 := harvest(t, r, fast())
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	if fmt.Sprint(h1.Targets) != fmt.Sprint(h2.Targets) {
		t.Error("two harvests of one registry differ")
	}
	for i := 1; i < len(h1.Targets); i++ {
		a, b := h1.Targets[i-1], h1.Targets[i]
		if a.Name > b.Name || (a.Name == b.Name && a.Endpoint >= b.Endpoint) {
			t.Errorf("targets not sorted at %d: %s %s / %s %s", i, a.Name, a.Endpoint, b.Name, b.Endpoint)
		}
	}
}

func TestHarvestManyPages(t *testing.T) {
	entries := registrytest.Generate(1234, []string{"https://h1.example", "https://h2.example/"})
	r := registrytest.ServerWith(t, entries, registrytest.Config{SnakeCursorEven: true})
	h, err := harvest(t, r, fast())
	if err != nil {
		t.Fatal(err)
	}
	if !h.Complete || h.Pages != 13 || h.Servers != 1234 || len(h.Targets) != 1234 {
		t.Errorf("Complete=%v Pages=%d Servers=%d targets=%d", h.Complete, h.Pages, h.Servers, len(h.Targets))
	}
	if got := byEndpoint(h.Targets); got["https://h2.example/mcp/000001"].Name != "io.example.gen/server-000001" {
		t.Errorf("generated endpoint missing or misnamed")
	}
}

func TestHarvestRetries(t *testing.T) {
	entries := registrytest.Generate(25, []string{"https://x.example"})
	r := registrytest.ServerWith(t, entries, registrytest.Config{PageSize: 10,
		FailOnce: map[int]int{1: 503, 2: 500, 3: 429}})
	h, err := harvest(t, r, fast())
	if err != nil {
		t.Fatalf("Harvest: %v", err)
	}
	if !h.Complete || len(h.Targets) != 25 || h.Pages != 3 {
		t.Errorf("Complete=%v targets=%d pages=%d", h.Complete, len(h.Targets), h.Pages)
	}
	if n := len(r.Queries()); n != 6 {
		t.Errorf("%d requests, want 6 (3 pages, each failing once)", n)
	}
}

func TestHarvestRepeatedCursor(t *testing.T) {
	entries := registrytest.Generate(50, []string{"https://x.example"})
	r := registrytest.ServerWith(t, entries, registrytest.Config{PageSize: 10, RepeatCursorAt: 3})
	h, err := harvest(t, r, fast())
	if !errors.Is(err, registry.ErrRepeatedCursor) {
		t.Fatalf("err = %v, want ErrRepeatedCursor", err)
	}
	if h == nil || h.Complete || h.Pages != 3 {
		t.Fatalf("result %+v, want incomplete after 3 pages", h)
	}
	// What was read is kept for the crawl, but nothing is delisted.
	if len(h.Targets) != 30 {
		t.Errorf("%d targets kept, want 30", len(h.Targets))
	}
	prev := registrytest.Generate(50, []string{"https://x.example"})
	full := registrytest.Server(t, prev)
	hf, err := harvest(t, full, fast())
	if err != nil {
		t.Fatal(err)
	}
	if d := registry.Delist(hf.Targets, h); d != nil {
		t.Errorf("incomplete harvest delisted %d targets", len(d))
	}
}

func TestHarvestPageFailsForever(t *testing.T) {
	entries := registrytest.Generate(30, []string{"https://x.example"})
	r := registrytest.ServerWith(t, entries, registrytest.Config{PageSize: 10, FailAlways: 2})
	opts := fast()
	opts.Attempts = 4
	h, err := harvest(t, r, opts)
	var pe *registry.PageError
	if !errors.As(err, &pe) || pe.Page != 2 || pe.Status != 500 {
		t.Fatalf("err = %v, want a PageError for page 2 with status 500", err)
	}
	if h.Complete || h.Pages != 1 || len(h.Targets) != 10 {
		t.Errorf("Complete=%v Pages=%d targets=%d", h.Complete, h.Pages, len(h.Targets))
	}
	if n := len(r.Queries()); n != 1+4 {
		t.Errorf("%d requests, want 5 (page 1, then 4 attempts at page 2)", n)
	}
	before := registrytest.Generate(30, []string{"https://x.example"})
	hb, err := harvest(t, registrytest.Server(t, before), fast())
	if err != nil {
		t.Fatal(err)
	}
	if d := registry.Delist(hb.Targets, h); len(d) != 0 {
		t.Errorf("incomplete harvest delisted %d targets", len(d))
	}
}

func TestHarvestNoRetryOnClientError(t *testing.T) {
	r := registrytest.ServerWith(t, registrytest.Generate(5, []string{"https://x.example"}),
		registrytest.Config{FailOnce: map[int]int{1: 404}})
	_, err := harvest(t, r, fast())
	var pe *registry.PageError
	if !errors.As(err, &pe) || pe.Status != 404 {
		t.Fatalf("err = %v, want PageError 404", err)
	}
	if n := len(r.Queries()); n != 1 {
		t.Errorf("%d requests, want 1: a 404 is not retried", n)
	}
}

func TestDelist(t *testing.T) {
	all := registrytest.Generate(20, []string{"https://x.example"})
	before, err := harvest(t, registrytest.Server(t, all), fast())
	if err != nil {
		t.Fatal(err)
	}
	kept := append(append([]registrytest.Entry(nil), all[:5]...), all[8:]...)
	after, err := harvest(t, registrytest.Server(t, kept), fast())
	if err != nil {
		t.Fatal(err)
	}
	gone := registry.Delist(before.Targets, after)
	if len(gone) != 3 {
		t.Fatalf("%d delisted, want 3", len(gone))
	}
	for i, g := range gone {
		if !g.Delisted || g.Name != all[5+i].Name {
			t.Errorf("delisted[%d] = %s delisted=%v, want %s", i, g.Name, g.Delisted, all[5+i].Name)
		}
	}
	if registry.Delist(before.Targets, nil) != nil {
		t.Error("Delist with no harvest returned targets")
	}
}

func TestHarvestBounds(t *testing.T) {
	entries := registrytest.Generate(40, []string{"https://x.example"})
	cases := []struct {
		name string
		mod  func(*registry.Options)
		want error
	}{
		{"pages", func(o *registry.Options) { o.MaxPages = 3 }, registry.ErrTooManyPages},
		{"servers", func(o *registry.Options) { o.MaxServers = 25 }, registry.ErrTooManyServers},
		{"bytes", func(o *registry.Options) { o.MaxPageBytes = 2000 }, registry.ErrPageTooLarge},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := registrytest.ServerWith(t, entries, registrytest.Config{PageSize: 10})
			opts := fast()
			c.mod(&opts)
			h, err := harvest(t, r, opts)
			if !errors.Is(err, c.want) {
				t.Fatalf("err = %v, want %v", err, c.want)
			}
			if h.Complete {
				t.Error("bounded harvest reported complete")
			}
		})
	}
}

func TestHarvestMalformedPage(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, `{"servers":[{"server":{"name":"io.ok/one","remotes":[{"type":"sse","url":"https://ok.example/sse"}]}},`+
			`{"server":{"name":7}},{"server":{"name":"io.bad/ctl\u0007"}}],"metadata":{}}`)
	}))
	defer srv.Close()
	h, err := registry.Harvest(context.Background(), srv.Client(), srv.URL+"/", fast())
	if err != nil {
		t.Fatal(err)
	}
	if h.Malformed != 2 || len(h.Targets) != 1 || h.Targets[0].RegistryStatus != "active" {
		t.Errorf("Malformed=%d targets=%v", h.Malformed, h.Targets)
	}

	bad := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, `{"servers":[`)
	}))
	defer bad.Close()
	if h, err := registry.Harvest(context.Background(), bad.Client(), bad.URL, fast()); err == nil || h.Complete {
		t.Errorf("truncated page accepted: %v", err)
	}
}

func TestHarvestRetryAfterAndCancel(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Retry-After", "3600")
		w.WriteHeader(http.StatusTooManyRequests)
	}))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	opts := fast()
	opts.MaxRetryDelay = time.Hour // Retry-After is honoured up to this
	start := time.Now()
	h, err := registry.Harvest(ctx, srv.Client(), srv.URL, opts)
	if !errors.Is(err, context.DeadlineExceeded) || h.Complete {
		t.Errorf("err = %v, want the deadline while waiting out Retry-After", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("cancel took %v", d)
	}
}

func TestOptOut(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "opt-out.txt")
	body := "# operators\n\nExample.COM.\n  https://api.other.example/mcp  # this endpoint only\nhttps://slash.example/x/\n"
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	o, err := registry.LoadOptOut(path)
	if err != nil {
		t.Fatal(err)
	}
	if o.Len() != 3 {
		t.Errorf("Len = %d, want 3", o.Len())
	}
	cases := map[string]bool{
		"https://example.com/mcp":              true,
		"https://MCP.example.com:8443/mcp":     true,
		"https://notexample.com/mcp":           false,
		"https://example.com.evil.example/mcp": false,
		"https://api.other.example/mcp":        true,
		"https://api.other.example/mcp/v2":     true,
		"https://api.other.example/mcp?x=1":    true,
		"https://api.other.example/mcpx":       false,
		"https://api.other.example/other":      false,
		"https://slash.example/x/anything":     true,
		"https://slash.example/xy":             false,
	}
	for ep, want := range cases {
		if got := o.Covers(ep); got != want {
			t.Errorf("Covers(%s) = %v, want %v", ep, got, want)
		}
	}
	var none *registry.OptOut
	if none.Covers("https://example.com/") || none.Len() != 0 {
		t.Error("nil OptOut covers something")
	}
	for _, bad := range []string{"a b.example", "http://", "host/path", "user@host"} {
		if _, err := registry.ParseOptOut([]byte(bad)); err == nil {
			t.Errorf("ParseOptOut(%q) accepted", bad)
		}
	}
	if _, err := registry.LoadOptOut(filepath.Join(dir, "missing")); err == nil {
		t.Error("missing file accepted")
	}
}

// The shipped example list must parse.
func TestShippedOptOut(t *testing.T) {
	o, err := registry.LoadOptOut(filepath.Join("..", "..", "configs", "opt-out.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if !o.Covers("https://mcp.opted-out.example/mcp") {
		t.Error("example host entry does not cover its subdomain")
	}
}

func BenchmarkHarvest10k(b *testing.B) {
	bases := make([]string, 500)
	for i := range bases {
		bases[i] = fmt.Sprintf("https://h%03d.example", i)
	}
	r := registrytest.Server(b, registrytest.Generate(10_000, bases))
	for b.Loop() {
		h, err := registry.Harvest(context.Background(), r.Client(), r.URL, fast())
		if err != nil || len(h.Targets) != 10_000 {
			b.Fatal(err)
		}
	}
}

// A connection dropped mid-answer is a transport error, retried like a 5xx.
func TestHarvestRetriesDroppedConnection(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if calls.Add(1) == 1 {
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close()
			}
			return
		}
		fmt.Fprint(w, `{"servers":[{"server":{"name":"io.ok/one","remotes":[{"type":"streamable-http","url":"https://ok.example/mcp"}]}}]}`)
	}))
	defer srv.Close()
	h, err := registry.Harvest(context.Background(), srv.Client(), srv.URL, fast())
	if err != nil || !h.Complete || len(h.Targets) != 1 {
		t.Fatalf("err %v, result %+v", err, h)
	}
	if n := calls.Load(); n != 2 {
		t.Errorf("%d requests, want 2", n)
	}
}

// TestOptOutIDNAHost: a host entry covers its name however it is spelt, in
// Unicode or in the IDNA ASCII form the crawler dials, since an operator's
// wish must not depend on which spelling the registry entry happened to use.
func TestOptOutIDNAHost(t *testing.T) {
	for _, tc := range []struct{ entry, endpoint string }{
		{"bücher.example", "https://xn--bcher-kva.example/mcp"},
		{"xn--bcher-kva.example", "https://bücher.example/mcp"},
		{"bücher.example", "https://mcp.BÜCHER.example/mcp"},
	} {
		o, err := registry.ParseOptOut([]byte(tc.entry))
		if err != nil {
			t.Fatal(err)
		}
		if !o.Covers(tc.endpoint) {
			t.Errorf("opt-out %q does not cover %s", tc.entry, tc.endpoint)
		}
	}
}

// TestHarvestKeepsBoundedRecords: entries bloated with remotes and text are
// cut down as they are read, so what a harvest holds until its last page
// does not grow with the registry's bytes.
// TestHarvestDescriptionAndLinks: a record's description, repository.url
// and websiteUrl reach its targets, clipped to HISTOR's bounds; a
// description keeps its line breaks and loses other control characters,
// and a link that is not an http or https URL is not kept.
func TestHarvestDescriptionAndLinks(t *testing.T) {
	sh := func(u string) []registrytest.Remote { return []registrytest.Remote{{Type: "streamable-http", URL: u}} }
	long := strings.Repeat("é", 1500) // 3000 bytes
	reg := registrytest.Server(t, []registrytest.Entry{
		{Name: "io.a/linked", Description: " Reads the weather.\nTwo lines.\x1b[31m ", Repository: "https://github.com/a/linked",
			Website: "https://a.example", Remotes: sh("https://a.example/mcp")},
		{Name: "io.b/long", Description: long, Repository: "https://github.com/b/" + strings.Repeat("x", 600),
			Website: "javascript:alert(1)", Remotes: sh("https://b.example/mcp")},
		{Name: "io.c/bare", Repository: "file:///etc/passwd", Website: "http://c.example/\u0000", Remotes: sh("https://c.example/mcp")},
	})
	res, err := registry.Harvest(context.Background(), reg.Client(), reg.URL, fast())
	if err != nil || len(res.Targets) != 3 {
		t.Fatalf("%v, %+v", err, res)
	}
	a, b, c := res.Targets[0], res.Targets[1], res.Targets[2]
	if a.Description != "Reads the weather.\nTwo lines.\uFFFD[31m" || a.Repository != "https://github.com/a/linked" || a.Website != "https://a.example" {
		t.Errorf("a: %q %q %q", a.Description, a.Repository, a.Website)
	}
	if len(b.Description) > 2000 || !strings.HasSuffix(b.Description, clip.Mark) || !utf8.ValidString(b.Description) ||
		len(b.Repository) > 500 || !strings.HasPrefix(b.Repository, "https://github.com/b/") || b.Website != "" {
		t.Errorf("b: description %d bytes, repository %q, website %q", len(b.Description), b.Repository, b.Website)
	}
	if c.Description != "" || c.Repository != "" || c.Website != "" {
		t.Errorf("c: %q %q %q", c.Description, c.Repository, c.Website)
	}
}

func TestHarvestKeepsBoundedRecords(t *testing.T) {
	var entries []registrytest.Entry
	for i := range 100 {
		e := registrytest.Entry{Name: fmt.Sprintf("io.example/bloat-%03d", i), Title: strings.Repeat("t", 34_000),
			Description: strings.Repeat("d", 33_000), Website: "https://w.example/" + strings.Repeat("w", 33_000)}
		for j := range 200 {
			pad := "" // the kept remotes carry spaces the harvest trims away
			if j < registry.MaxRemotesPerServer {
				pad = strings.Repeat(" ", 20_000)
			}
			e.Remotes = append(e.Remotes, registrytest.Remote{Type: registry.TransportStreamable,
				URL: fmt.Sprintf("%shttps://bloat.example/%d/%d/%s", pad, i, j, strings.Repeat("u", 900))})
		}
		entries = append(entries, e)
	}
	reg := registrytest.ServerWith(t, entries, registrytest.Config{PageSize: 10}) // 10 pages, ~28 MB
	// Before each page request, measure what the harvest holds from the
	// pages before it; compare the third request with the last, so one-off
	// costs of the first pages (buffers growing, connections) do not count.
	var heap []uint64
	client := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		heap = append(heap, m.HeapAlloc)
		return reg.Client().Transport.RoundTrip(r)
	})}
	res, err := registry.Harvest(context.Background(), client, reg.URL, fast())
	if err != nil {
		t.Fatal(err)
	}
	if res.Pages != 10 || len(res.Targets) != 100*registry.MaxRemotesPerServer {
		t.Fatalf("%d pages, %d targets, want 10 and %d", res.Pages, len(res.Targets), 100*registry.MaxRemotesPerServer)
	}
	if tg := res.Targets[0]; len(tg.Title) > 300 || len(tg.Description) > 2000 || len(tg.Website) > 500 {
		t.Errorf("title of %d bytes, description of %d, website of %d kept", len(tg.Title), len(tg.Description), len(tg.Website))
	}
	// What seventy compacted records may hold (about 9.5 KiB each, at
	// most) and a page's buffers stay well under 2 MiB; 20 MB would not.
	if grew := int64(heap[len(heap)-1]) - int64(heap[2]); grew > 2<<20 {
		t.Errorf("seven pages of bloated entries (about 20 MB) grew the harvest by %d KiB", grew>>10)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
