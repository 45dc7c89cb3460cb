package mcpface

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/histor-observer/histor/internal/feedtext"
	"github.com/histor-observer/histor/internal/httpx"
	"github.com/histor-observer/histor/log/canon"
	"github.com/histor-observer/histor/node/check"
	"github.com/histor-observer/histor/node/views"
)

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

// checker is the checker now; nil when there is none.
func (cfg Config) checker() *check.Checker {
	if cfg.Checker == nil {
		return nil
	}
	return cfg.Checker()
}

// model is the read model now; nil when there is none.
func (cfg Config) model() *Model {
	if cfg.Model == nil {
		return nil
	}
	return cfg.Model()
}

// sources are the server record's other sources now.
func (cfg Config) sources() views.Sources {
	if cfg.Sources == nil {
		return views.Sources{}
	}
	return cfg.Sources()
}

// checkTool answers the check tool as POST /api/v1/check answers: the
// same parser, limits and signed answer.
func checkTool(c *check.Checker, client httpx.ClientKey, args json.RawMessage) ([]byte, error) {
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

// server answers the server tool with /api/v1/servers/<id>'s record.
func (cfg Config) server(_ context.Context, args json.RawMessage) ([]byte, error) {
	var in struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(args, &in); err != nil || !feedtext.IsServerID(in.ID) {
		return nil, &toolError{"id must be a server id (16 lowercase hex characters)"}
	}
	md := cfg.model()
	if md == nil {
		return nil, &toolError{"no server records yet"}
	}
	s := md.Catalog.ByID(in.ID)
	if s == nil {
		return nil, &toolError{"unknown server"}
	}
	return views.ServerRecord(md.Catalog, s, md.Now(), cfg.sources())
}

// changes answers the changes tool with /api/v1/changes's rows.
func (cfg Config) changes(_ context.Context, args json.RawMessage) ([]byte, error) {
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
	if limit < 1 || limit > maxChanges {
		return nil, &toolError{fmt.Sprintf("limit must be between 1 and %d", maxChanges)}
	}
	md := cfg.model()
	if md == nil {
		return nil, &toolError{"no changes yet"}
	}
	cs, err := md.Catalog.Changes(0, limit)
	if err != nil {
		return nil, fmt.Errorf("listing changes: %w", err)
	}
	return canon.MarshalPlain(struct {
		Changes []views.ChangeRow `json:"changes"`
	}{views.ChangeRows(md.Catalog, cs)})
}
