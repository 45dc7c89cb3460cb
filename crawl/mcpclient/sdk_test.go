package mcpclient

import (
	"context"
	"net/http"
	"slices"
	"testing"

	"github.com/histor-observer/histor/log/mtl"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type echoIn struct {
	Text  string `json:"text" jsonschema:"the text to echo"`
	Times int    `json:"times,omitempty" jsonschema:"how many times"`
}

type sumIn struct {
	A int `json:"a"`
	B int `json:"b"`
}

// sdkServer is an MCP Go SDK server with a fixed tool set, paged in twos so
// the client must drain several pages.
func sdkServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "fixture", Version: "1.2.3"},
		&mcp.ServerOptions{Instructions: "fixture instructions", PageSize: 2})
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Echoes the text back."},
		func(context.Context, *mcp.CallToolRequest, echoIn) (*mcp.CallToolResult, any, error) {
			panic("a tool was called")
		})
	mcp.AddTool(s, &mcp.Tool{Name: "sum", Description: "Adds two integers."},
		func(context.Context, *mcp.CallToolRequest, sumIn) (*mcp.CallToolResult, any, error) {
			panic("a tool was called")
		})
	mcp.AddTool(s, &mcp.Tool{Name: "ünïcode-tool", Description: "Name outside ASCII; \u2028 inside."},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			panic("a tool was called")
		})
	return s
}

func sdkHandlers() map[string]struct {
	h   http.Handler
	tr  Transport
	era string
} {
	s := sdkServer()
	get := func(*http.Request) *mcp.Server { return s }
	return map[string]struct {
		h   http.Handler
		tr  Transport
		era string
	}{
		"stateful":     {mcp.NewStreamableHTTPHandler(get, nil), StreamableHTTP, EraLegacyStreamable},
		"stateless":    {mcp.NewStreamableHTTPHandler(get, &mcp.StreamableHTTPOptions{Stateless: true}), StreamableHTTP, EraModern},
		"jsonresponse": {mcp.NewStreamableHTTPHandler(get, &mcp.StreamableHTTPOptions{JSONResponse: true}), StreamableHTTP, EraLegacyStreamable},
		"stateless-json": {mcp.NewStreamableHTTPHandler(get, &mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true}),
			StreamableHTTP, EraModern},
		"sse": {mcp.NewSSEHandler(get, nil), SSE, EraLegacySSE},
	}
}

// TestGoSDKServers observes the Go SDK's handlers in each mode: each in its
// era, all with one tool set and one digest, and only read-only methods sent.
func TestGoSDKServers(t *testing.T) {
	digests := map[string]string{}
	for name, tc := range sdkHandlers() {
		t.Run(name, func(t *testing.T) {
			var log methodLog
			srv := serve(t, log.wrap(tc.h))
			obs := observe(t, testClient(Config{}), srv.URL, tc.tr)
			if obs.Status != StatusOK {
				t.Fatalf("status %s (%s), want ok", obs.Status, obs.Detail)
			}
			if obs.Era != tc.era {
				t.Errorf("era %q, want %q", obs.Era, tc.era)
			}
			if len(obs.Tools) != 3 || obs.Pages != 2 {
				t.Errorf("%d tools in %d pages, want 3 in 2", len(obs.Tools), obs.Pages)
			}
			if obs.ServerInfo["name"] != "fixture" {
				t.Errorf("serverInfo %v", obs.ServerInfo)
			}
			if obs.Instructions == nil || *obs.Instructions != "fixture instructions" {
				t.Errorf("instructions %v", obs.Instructions)
			}
			if !versionRE.MatchString(obs.ProtocolVersion) {
				t.Errorf("protocol version %q", obs.ProtocolVersion)
			}
			d, err := mtl.Digest(obs.Tools)
			if err != nil {
				t.Fatalf("digest: %v", err)
			}
			digests[name] = d
			assertReadOnly(t, &log)
			assertSequence(t, &log, tc.era)
		})
	}
	var first string
	for name, d := range digests {
		if first == "" {
			first = d
		}
		if d != first {
			t.Errorf("%s digest %s differs from %s", name, d, first)
		}
	}
}

// assertSequence checks the methods sent, in order, and the modern headers.
func assertSequence(t *testing.T, l *methodLog, era string) {
	t.Helper()
	want := []string{methodDiscover, methodInitialize, methodInitialized, methodToolsList, methodToolsList}
	switch era {
	case EraModern:
		want = []string{methodDiscover, methodToolsList, methodToolsList}
	case EraLegacySSE:
		want = want[1:]
	}
	if got := l.list(); !slices.Equal(got, want) {
		t.Errorf("methods sent %v, want %v", got, want)
	}
	for _, r := range l.reqs {
		if era == EraModern && (r.Header.Get("Mcp-Method") == "" || r.Header.Get("MCP-Protocol-Version") != ModernVersion) {
			t.Errorf("modern request without Mcp-Method/MCP-Protocol-Version: %v", r.Header)
		}
		if r.Header.Get("Accept-Encoding") != "gzip, deflate" || r.Header.Get("User-Agent") == "" {
			t.Errorf("request headers %v", r.Header)
		}
	}
}
