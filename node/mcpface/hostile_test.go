package mcpface_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/histor-observer/histor/node/check"
	"github.com/histor-observer/histor/node/mcpface"
)

// TestMalformedRequests: requests to the node's own /mcp face that are too large, not JSON,
// not JSON-RPC or of a method it does not serve (the face is stateless: a tool call needs no
// initialize first) get a 4xx answer (a message without a method is read as a reply: 202,
// nothing done), never a 5xx, a hang or a crash, and the face answers a well-formed client
// after them.
func TestMalformedRequests(t *testing.T) {
	face := mcpface.New(mcpface.Config{Version: "test"})
	srv := httptest.NewServer(serve(mcpface.Routes(func() *mcpface.Face { return face })))
	defer srv.Close()
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`
	for _, tc := range []struct {
		name, body, contentType string
		status                  int
	}{
		{"over the body bound", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"check","arguments":{"tools":"` + strings.Repeat("a", check.MaxBodyBytes+128<<10) + `"}}}`, "application/json", 413},
		{"not JSON", `{"jsonrpc":`, "application/json", 400},
		{"not JSON-RPC", `[1,2,3]`, "application/json", 400},
		{"no method", `{"jsonrpc":"2.0","id":1}`, "application/json", 202},
		{"an unknown method", `{"jsonrpc":"2.0","id":1,"method":"sampling/createMessage","params":{}}`, "application/json", 400},
		{"a wrong content type", init, "text/plain", 415},
		{"invalid UTF-8", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\xff\xfe\"}", "application/json", 400},
	} {
		req, err := http.NewRequest(http.MethodPost, srv.URL+"/mcp", bytes.NewBufferString(tc.body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", tc.contentType)
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		resp.Body.Close()
		if resp.StatusCode != tc.status {
			t.Errorf("%s: %d %s, want %d", tc.name, resp.StatusCode, body, tc.status)
		}
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "after", Version: "1"}, nil)
	sess, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: srv.URL + "/mcp"}, nil)
	if err != nil {
		t.Fatalf("a well-formed client after them: %v", err)
	}
	defer sess.Close()
	if _, err := sess.ListTools(context.Background(), nil); err != nil {
		t.Fatalf("listing tools after them: %v", err)
	}
}
