package node

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/histor-observer/histor/internal/feedtext"
	"github.com/histor-observer/histor/internal/httpx"
	"github.com/histor-observer/histor/node/check"
	"github.com/histor-observer/histor/node/views"
)

// The MCP face: /mcp answers MCP over streamable HTTP (the MCP Go SDK),
// offering as tools what /api/v1/check, /api/v1/servers/<id> and
// /api/v1/changes answer, from the same functions. It is stateless (every
// POST stands alone, as the 2026-07-28 revision has it), so it holds
// nothing between requests and a node restart loses no session.

// mcpMaxBody bounds one MCP request: a check's 2 MiB tool set and the
// JSON-RPC around it.
const mcpMaxBody = check.MaxBodyBytes + 64<<10

// maxMCPChanges bounds the changes tool, as histor.changes@v1 does.
const maxMCPChanges = 50

// FaceTools are the tool definitions of the MCP face, in the order
// tools/list gives them. Their words are held to the node's own pattern
// scan and forbidden-word check by the tests.
var FaceTools = []*mcp.Tool{
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

// mcpFace builds the /mcp handler over a.
func (n *Node) mcpFace(a *api) http.Handler {
	impl := &mcp.Implementation{Name: "histor", Title: "histor observer", Version: Version}
	return mcp.NewStreamableHTTPHandler(func(r *http.Request) *mcp.Server {
		// One server per request: the check tool counts against the
		// caller's own /check limits, so it must know who calls.
		s := mcp.NewServer(impl, &mcp.ServerOptions{Logger: n.cfg.Logger})
		client, _ := httpx.ClientAddr(r, a.check.TrustedProxies())
		tools := map[string]func(context.Context, json.RawMessage) ([]byte, error){
			"changes": a.mcpChanges,
			"check": func(_ context.Context, args json.RawMessage) ([]byte, error) {
				return a.mcpCheck(httpx.KeyOf(client), args)
			},
			"server": a.mcpServer,
		}
		for _, t := range FaceTools {
			s.AddTool(t, toolHandler(tools[t.Name]))
		}
		return s
	}, &mcp.StreamableHTTPOptions{
		Stateless: true, JSONResponse: true, Logger: n.cfg.Logger, MaxRequestBodyBytes: mcpMaxBody,
		// The face serves public, read-only answers and reads no
		// credentials; a node behind a local reverse proxy sees its public
		// host name in Host, which the SDK's rebinding guard would refuse.
		DisableLocalhostProtection: true,
	})
}

// toolError is a tool's refusal of its arguments: the caller's to fix, so
// it goes back as a tool result with isError rather than a protocol error.
type toolError struct{ msg string }

func (e *toolError) Error() string { return e.msg }

func toolHandler(fn func(context.Context, json.RawMessage) ([]byte, error)) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		body, err := fn(ctx, req.Params.Arguments)
		var te *toolError
		switch {
		case errors.As(err, &te):
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: te.msg}}}, nil
		case err != nil:
			return nil, err
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(body)}},
			StructuredContent: json.RawMessage(body)}, nil
	}
}

// serveMCP hands a request to the MCP face.
func (a *api) serveMCP(w http.ResponseWriter, r *http.Request) {
	if a.mcp == nil {
		a.fail(w, http.StatusServiceUnavailable, "no MCP face")
		return
	}
	a.mcp.ServeHTTP(w, r)
}

// mcpCheck answers the check tool as POST /api/v1/check answers: the same
// parser, limits and signed answer.
func (a *api) mcpCheck(client httpx.ClientKey, args json.RawMessage) ([]byte, error) {
	c := a.check
	if !c.Available() {
		return nil, &toolError{"check is not available: this node has no crawl state"}
	}
	if ok, _ := c.Allow(client); !ok {
		return nil, &toolError{"too many checks; slow down"}
	}
	q, err := check.ParseQuery(args)
	if err != nil {
		return nil, &toolError{err.Error()}
	}
	doc, err := c.Answer(q, client)
	if err != nil {
		return nil, fmt.Errorf("answering check: %w", err)
	}
	return doc, nil
}

// mcpServer answers the server tool with /api/v1/servers/<id>'s record.
func (a *api) mcpServer(_ context.Context, args json.RawMessage) ([]byte, error) {
	var in struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(args, &in); err != nil || !feedtext.IsServerID(in.ID) {
		return nil, &toolError{"id must be a server id (16 lowercase hex characters)"}
	}
	rd := a.read.Load()
	if rd == nil {
		return nil, &toolError{"no server records yet"}
	}
	s := rd.Catalog.ByID(in.ID)
	if s == nil {
		return nil, &toolError{"unknown server"}
	}
	return a.serverRecord(rd.Catalog, s, rd.now())
}

// mcpChanges answers the changes tool with /api/v1/changes's rows.
func (a *api) mcpChanges(_ context.Context, args json.RawMessage) ([]byte, error) {
	in := struct {
		Limit *int `json:"limit"`
	}{}
	if len(args) > 0 {
		if err := json.Unmarshal(args, &in); err != nil {
			return nil, &toolError{"arguments must be an object"}
		}
	}
	limit := 20
	if in.Limit != nil {
		limit = *in.Limit
	}
	if limit < 1 || limit > maxMCPChanges {
		return nil, &toolError{fmt.Sprintf("limit must be between 1 and %d", maxMCPChanges)}
	}
	rd := a.read.Load()
	if rd == nil {
		return nil, &toolError{"no changes yet"}
	}
	cs, err := rd.Catalog.Changes(0, limit)
	if err != nil {
		return nil, fmt.Errorf("listing changes: %w", err)
	}
	return encodeJSON(struct {
		Changes []views.ChangeRow `json:"changes"`
	}{views.ChangeRows(rd.Catalog, cs)})
}
