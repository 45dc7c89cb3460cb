package node_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mmcdole/gofeed"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/histor-observer/histor/crawl/registry/registrytest"
	"github.com/histor-observer/histor/log/awr"
	"github.com/histor-observer/histor/node"
	"github.com/histor-observer/histor/node/events"
	"github.com/histor-observer/histor/node/webhook"
)

// twoCrawls is an observer that crawled a registry of one server twice,
// the server's tool description changing in between.
func twoCrawls(t *testing.T) (o *observer, srv *changingServer, endpoint string) {
	srv = newChangingServer(t, "Returns the forecast for a city.")
	reg := registrytest.Server(t, []registrytest.Entry{
		{Name: "io.example/weather", Remotes: []registrytest.Remote{{Type: "streamable-http", URL: srv.srv.URL + "/mcp"}}},
	})
	var mu sync.Mutex
	clock := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	now := func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }
	o = startObserver(t, reg.URL, now)
	o.crawl()
	srv.set("Returns the forecast for a city, in degrees Celsius.")
	mu.Lock()
	clock = clock.Add(25 * time.Hour)
	mu.Unlock()
	o.crawl()
	return o, srv, srv.srv.URL + "/mcp"
}

// TestFaceOverStreamableHTTP calls the three tools with the Go SDK's client
// against a node on loopback; each answers what its JSON route answers.
func TestFaceOverStreamableHTTP(t *testing.T) {
	if testing.Short() {
		t.Skip("crawls a local MCP server over loopback twice; skipped under -short")
	}
	o, srv, endpoint := twoCrawls(t)
	ctx := context.Background()
	c := mcp.NewClient(&mcp.Implementation{Name: "face-test", Version: "1"}, nil)
	sess, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: o.base + "/mcp"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	list, err := sess.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range list.Tools {
		names = append(names, tl.Name)
	}
	if strings.Join(names, ",") != "changes,check,server" {
		t.Fatalf("tools/list names %v", names)
	}
	id := serverID(t, o, "io.example/weather")
	tools := srv.toolsList(t)
	checkBody, _ := json.Marshal(map[string]any{"endpoint": endpoint, "tools": tools})
	for _, c := range []struct {
		tool string
		args any
		want []byte
	}{
		{"check", map[string]any{"endpoint": endpoint, "tools": tools}, o.post("/api/v1/check", checkBody)},
		{"server", map[string]any{"id": id}, o.get("/api/v1/servers/" + id)},
		{"changes", map[string]any{"limit": 5}, o.get("/api/v1/changes?limit=5")},
	} {
		res, err := sess.CallTool(ctx, &mcp.CallToolParams{Name: c.tool, Arguments: c.args})
		if err != nil {
			t.Fatalf("%s: %v", c.tool, err)
		}
		if res.IsError || len(res.Content) != 1 {
			t.Fatalf("%s: error result %+v", c.tool, res.Content)
		}
		got := res.Content[0].(*mcp.TextContent).Text
		if got != string(c.want) {
			t.Errorf("%s answers\n%s\nwhere its route answers\n%s", c.tool, got, c.want)
		}
	}
	res, err := sess.CallTool(ctx, &mcp.CallToolParams{Name: "server", Arguments: map[string]any{"id": "not-an-id"}})
	if err != nil || !res.IsError {
		t.Errorf("server with a bad id: %+v, %v; want an error result", res, err)
	}
}

func (o *observer) post(path string, body []byte) []byte {
	o.t.Helper()
	resp, err := http.Post(o.base+path, "application/json", bytes.NewReader(body))
	if err != nil {
		o.t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		o.t.Fatalf("POST %s: %d %s", path, resp.StatusCode, out)
	}
	return out
}

// TestSecurityEventsOfAChange: the change a second crawl records becomes a
// signed definitions event, paged by cursor and watch, and an entry of the
// security feed.
func TestSecurityEventsOfAChange(t *testing.T) {
	if testing.Short() {
		t.Skip("crawls a local MCP server over loopback twice; skipped under -short")
	}
	o, _, endpoint := twoCrawls(t)
	id := serverID(t, o, "io.example/weather")
	var page struct {
		Events     []events.Item `json:"events"`
		NextCursor uint64        `json:"nextCursor"`
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		o.getJSON("/api/v1/security-events?after=0", &page)
		if len(page.Events) > 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if len(page.Events) != 1 || page.NextCursor != 1 || page.Events[0].Cursor != 1 {
		t.Fatalf("events after the change: %+v", page)
	}
	ev, err := events.Verify(page.Events[0].Event, o.issuerKey())
	if err != nil {
		t.Fatal(err)
	}
	if ev["kind"] != events.KindDefinitions || ev["target"] != id || ev["evidence"].(map[string]any)["endpoint"] != endpoint {
		t.Errorf("event %v", ev)
	}
	o.getJSON("/api/v1/security-events?after=1", &page)
	if len(page.Events) != 0 || page.NextCursor != 1 {
		t.Errorf("after the last cursor: %+v", page)
	}
	o.getJSON("/api/v1/security-events?watch=0123456789abcdef", &page)
	if len(page.Events) != 0 {
		t.Errorf("watching another server: %+v", page)
	}
	feed, err := gofeed.NewParser().ParseString(string(o.get("/security-feed.xml?watch=" + id)))
	if err != nil {
		t.Fatal(err)
	}
	if len(feed.Items) != 1 || feed.Items[0].Title != "io.example/weather: tool definitions changed" {
		t.Errorf("feed items %+v", feed.Items)
	}
}

func (o *observer) issuerKey() ed25519.PublicKey {
	o.t.Helper()
	pub, err := awr.ParseDIDKey(o.n.DID())
	if err != nil {
		o.t.Fatal(err)
	}
	return pub
}

func TestNodeRefusesWebhookConfigs(t *testing.T) {
	for _, w := range []webhook.Subscription{
		{URL: "http://hooks.example/x", Secret: strings.Repeat("s", 32)},
		{URL: "https://hooks.example/x", Secret: "short"},
	} {
		_, err := node.New(node.Config{DataDir: t.TempDir(), Webhooks: []webhook.Subscription{w}})
		if !errors.Is(err, webhook.ErrConfig) {
			t.Errorf("%s: New = %v, want a webhook config refusal", w.URL, err)
		}
	}
}
