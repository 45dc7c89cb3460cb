package mcpface_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/histor-observer/histor/internal/httpx"
	"github.com/histor-observer/histor/node/mcpface"
)

// serve answers through routes as the node's router does.
func serve(routes []httpx.Route) http.Handler {
	rt := httpx.NewRouter(routes)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if m := rt.Lookup(r); m != nil {
			if h, _ := m.Handler(r.Method); h != nil {
				h.ServeHTTP(w, r)
				return
			}
		}
		httpx.WriteDetail(w, http.StatusNotFound, "not found")
	})
}

// TestToolRefusals: a face without crawl state or checker, and a call with
// bad arguments, answer tool errors (results with isError) the caller can
// read, never protocol errors.
func TestToolRefusals(t *testing.T) {
	face := mcpface.New(mcpface.Config{Version: "test"})
	srv := httptest.NewServer(serve(mcpface.Routes(func() *mcpface.Face { return face })))
	defer srv.Close()
	ctx := context.Background()
	c := mcp.NewClient(&mcp.Implementation{Name: "face-test", Version: "1"}, nil)
	sess, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: srv.URL + "/mcp"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	for _, tc := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{"check", map[string]any{"name": "io.example/one"}, "check is not available: this node has no crawl state"},
		{"server", map[string]any{"id": "0123456789abcdef"}, "no server records yet"},
		{"server", map[string]any{"id": "not-an-id"}, "id must be a server id (16 lowercase hex characters)"},
		{"changes", map[string]any{}, "no changes yet"},
		{"changes", map[string]any{"limit": 51}, "limit must be between 1 and 50"},
		{"changes", map[string]any{"limit": 0}, "limit must be between 1 and 50"},
	} {
		res, err := sess.CallTool(ctx, &mcp.CallToolParams{Name: tc.tool, Arguments: tc.args})
		if err != nil {
			t.Fatalf("%s %v: %v", tc.tool, tc.args, err)
		}
		if !res.IsError || len(res.Content) != 1 || res.Content[0].(*mcp.TextContent).Text != tc.want {
			t.Errorf("%s %v: %+v, want the tool error %q", tc.tool, tc.args, res.Content, tc.want)
		}
	}
}

// TestRoutesWithoutFace: before the node makes its face, /mcp answers 503.
func TestRoutesWithoutFace(t *testing.T) {
	w := httptest.NewRecorder()
	serve(mcpface.Routes(func() *mcpface.Face { return nil })).ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/mcp", nil))
	if w.Code != http.StatusServiceUnavailable || w.Body.String() != `{"detail":"no MCP face"}` {
		t.Errorf("/mcp without a face: %d %s", w.Code, w.Body)
	}
}
