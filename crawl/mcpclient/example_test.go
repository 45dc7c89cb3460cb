package mcpclient_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/histor-observer/histor/crawl/mcpclient"
	"github.com/histor-observer/histor/log/mtl"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Observing a server and digesting what it sent: the digest is that of the
// one tool as written here, {"name":"hello","description":"Says hello.","inputSchema":{"type":"object"}}. In production Config.HTTP
// comes from crawl/guard; here the server is on loopback.
func ExampleClient_Observe() {
	server := mcp.NewServer(&mcp.Implementation{Name: "demo", Version: "1"}, nil)
	server.AddTool(&mcp.Tool{Name: "hello", Description: "Says hello.", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return nil, nil })
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil))
	defer srv.Close()

	c := mcpclient.New(mcpclient.Config{Deadline: 10 * time.Second, ClientVersion: "0.1.0"})
	obs := c.Observe(context.Background(), srv.URL, mcpclient.StreamableHTTP)
	fmt.Println(obs.Status, obs.Era, obs.ServerInfo["name"], len(obs.Tools))
	digest, err := mtl.Digest(obs.Tools)
	fmt.Println(digest, err)
	// Output:
	// ok legacy-streamable demo 1
	// sha256-V6e8U6cqI8I6IVoeFWY98wjzYgxhFEPq4VOcyOeBPUQ= <nil>
}
