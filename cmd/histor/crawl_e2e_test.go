package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/histor-observer/histor/crawl/registry/registrytest"
)

// crawlFixture is a registry listing one MCP Go SDK server on loopback.
func crawlFixture(t *testing.T) string {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "e2e", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Echoes text."},
		func(context.Context, *mcp.CallToolRequest, struct {
			Text string `json:"text"`
		}) (*mcp.CallToolResult, any, error) {
			panic("a tool was called")
		})
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s },
		&mcp.StreamableHTTPOptions{Stateless: true}))
	t.Cleanup(srv.Close)
	reg := registrytest.Server(t, []registrytest.Entry{
		{Name: "io.example/echo", Remotes: []registrytest.Remote{{Type: "streamable-http", URL: srv.URL + "/mcp"}}},
	})
	return reg.URL
}

// TestCrawlBinary runs the built "histor crawl" against a local registry.
func TestCrawlBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the built binary against loopback servers; skipped under -short")
	}
	reg := crawlFixture(t)
	r := histor(t, "", "crawl", "--data", t.TempDir(), "--registry", reg, "--allow-private-targets")
	if r.code != 0 || !strings.Contains(r.stdout, "1 targets, 3 labels, 0 changes") {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stderr, "CRAWLING PRIVATE TARGETS") {
		t.Errorf("--allow-private-targets was not logged loudly: %s", r.stderr)
	}
}

// TestServeCrawlsAtStart: serve crawls in the background at start while the
// API answers, reports it on /health and stops cleanly on SIGTERM.
func TestServeCrawlsAtStart(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real node process; skipped under -short")
	}
	reg := crawlFixture(t)
	s := startServe(t, t.TempDir(), "--crawl-interval", "1h", "--registry", reg, "--allow-private-targets", "--curated=false")
	s.waitHealthy(t)
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, body := get(t, "http://"+s.addr+"/health")
		var h struct {
			TreeSize uint64  `json:"tree_size"`
			Running  bool    `json:"crawl_running"`
			Err      *string `json:"last_crawl_error"`
		}
		if err := json.Unmarshal([]byte(body), &h); err != nil {
			t.Fatal(err)
		}
		// Three labels for the registry's one server and three for the
		// node's own MCP face, which serve observes by default.
		if h.TreeSize == 6 && !h.Running {
			if h.Err != nil {
				t.Fatalf("crawl error on /health: %s", *h.Err)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no crawl at start: /health %s; stderr %s", body, s.stderr)
		}
		time.Sleep(100 * time.Millisecond)
	}
	s.stop(t)
}
