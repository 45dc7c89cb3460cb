// Package mcpface is the node's MCP face: /mcp answers MCP over streamable
// HTTP (the MCP Go SDK), offering as tools what /api/v1/check,
// /api/v1/servers/<id> and /api/v1/changes answer, from the same code (the
// checker of node/check and the views of node/views). It is stateless
// (every POST stands alone, as the 2026-07-28 revision has it), so it holds
// nothing between requests and a node restart loses no session. It reads
// the node only through Config.
package mcpface

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/histor-observer/histor/internal/httpx"
	"github.com/histor-observer/histor/node/catalog"
	"github.com/histor-observer/histor/node/check"
	"github.com/histor-observer/histor/node/views"
)

// maxBody bounds one MCP request: a check's tool set, as the checker
// bounds it, and the JSON-RPC around it.
const maxBody = check.MaxBodyBytes + 64<<10

// maxChanges bounds the changes tool, as histor.changes@v1 does.
const maxChanges = 50

// Tools are the tool definitions of the MCP face, in the order tools/list
// gives them. Their words are held to the node's own pattern scan and
// forbidden-word check by the tests.
var Tools = []*mcp.Tool{
	{
		Name: "changes",
		Description: "The newest tool-definition changes this observer recorded at the MCP servers it " +
			"crawls: which tools were added, removed or modified, any outside address that newly appeared, " +
			"and a link to each full diff. Newest first.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"limit":{"type":"integer","minimum":1,"maximum":50,` +
			`"description":"how many changes, 1 to 50 (default 20)"}}}`),
	},
	{
		Name: "check",
		Description: "Compare an MCP tool set with this observer's log. Send the server's endpoint URL (or its " +
			"registry name) and the tools array of the tools/list result you received, or its MTL/1 digest. " +
			"The answer, signed by the observer, says whether the observer saw the same set there and since " +
			"when, earlier sets it matches, the pattern matches in it, and what the other observers saw. It " +
			"says what was advertised, never what a server is worth.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{` +
			`"endpoint":{"type":"string","description":"the MCP endpoint URL"},` +
			`"name":{"type":"string","description":"or the server's registry name"},` +
			`"tools":{"type":"array","description":"the tools array of the tools/list result you received"},` +
			`"toolSetDigest":{"type":"string","description":"or its MTL/1 tool-set digest (sha256-...)"}}}`),
	},
	{
		Name: "server",
		Description: "This observer's record of one MCP server, by its server id (16 hex characters): " +
			"the current tool set and its digest, first pinned, last observed, unchanged since, the label " +
			"timeline, recent changes and what each observer saw.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"id":{"type":"string",` +
			`"description":"the server id, as /api/v1/servers lists it"}},"required":["id"]}`),
	},
}

// Model is the read model the server and changes tools answer from, as
// one call reads it.
type Model struct {
	// Catalog is the read model of the crawl. Required.
	Catalog *catalog.Catalog
	// Now is the clock of the server record. Required.
	Now func() time.Time
}

// Config is what the face reads of the node, at every call: the face is
// made before the node serves any crawl state.
type Config struct {
	// Version is the node's, named in the face's MCP implementation.
	Version string
	// Logger receives the MCP SDK's logs.
	Logger *slog.Logger
	// Checker answers the check tool; nil, or an unavailable Checker,
	// answers it with a tool error.
	Checker func() *check.Checker
	// Model is the read model now; nil (or a nil Model) answers the server
	// and changes tools with a tool error.
	Model func() *Model
	// Sources are the server record's other sources (the peer view, the
	// sandbox's runs) now; nil: none.
	Sources func() views.Sources
}

// Face is the /mcp handler.
type Face struct{ h http.Handler }

// New makes the face cfg describes.
func New(cfg Config) *Face {
	impl := &mcp.Implementation{Name: "histor", Title: "histor observer", Version: cfg.Version}
	return &Face{mcp.NewStreamableHTTPHandler(func(r *http.Request) *mcp.Server {
		// One server per request: the check tool counts against the
		// caller's own /check limits, so it must know who calls.
		s := mcp.NewServer(impl, &mcp.ServerOptions{Logger: cfg.Logger})
		c := cfg.checker()
		client, _ := httpx.ClientAddr(r, c.TrustedProxies())
		tools := map[string]func(context.Context, json.RawMessage) ([]byte, error){
			"changes": cfg.changes,
			"check": func(_ context.Context, args json.RawMessage) ([]byte, error) {
				return checkTool(c, httpx.KeyOf(client), args)
			},
			"server": cfg.server,
		}
		for _, t := range Tools {
			s.AddTool(t, toolHandler(tools[t.Name]))
		}
		return s
	}, &mcp.StreamableHTTPOptions{
		Stateless: true, JSONResponse: true, Logger: cfg.Logger, MaxRequestBodyBytes: maxBody,
		// The face serves public, read-only answers and reads no
		// credentials; a node behind a local reverse proxy sees its public
		// host name in Host, which the SDK's rebinding guard would refuse.
		DisableLocalhostProtection: true,
	})}
}

// ServeHTTP answers one MCP request.
func (f *Face) ServeHTTP(w http.ResponseWriter, r *http.Request) { f.h.ServeHTTP(w, r) }

// Routes are the face's route, /mcp. It reads the face from face at every
// request, since the routes are made before the node makes the face; a nil
// face answers 503.
func Routes(face func() *Face) []httpx.Route {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f := face()
		if f == nil {
			httpx.WriteDetail(w, http.StatusServiceUnavailable, "no MCP face")
			return
		}
		f.ServeHTTP(w, r)
	})
	return []httpx.Route{{Pattern: "/mcp", Methods: []string{http.MethodPost, http.MethodGet, http.MethodDelete}, Handler: h}}
}
