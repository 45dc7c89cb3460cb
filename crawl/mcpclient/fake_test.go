package mcpclient

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
)

// fake is a hand-written legacy streamable-HTTP MCP server whose tools/list
// answer a test replaces; it declines server/discover the way a legacy
// server does (404, no JSON-RPC body).
type fake struct {
	// tools writes the tools/list answer for request id and cursor.
	tools func(w http.ResponseWriter, id int64, cursor string)
	// session is sent as Mcp-Session-Id on the initialize answer, if set.
	session string
	// discoverStatus is the HTTP status server/discover gets (default 404).
	discoverStatus int
	// deleted counts DELETE requests carrying the session.
	deleted int
	// seenSession records the Mcp-Session-Id and MCP-Protocol-Version of the
	// last tools/list.
	seenSession, seenVersion string
	mu                       sync.Mutex // guards deleted, seenSession, seenVersion
}

type rpcIn struct {
	ID     json.Number `json:"id"`
	Method string      `json:"method"`
	Params struct {
		Cursor string `json:"cursor"`
	} `json:"params"`
}

func (f *fake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodDelete {
		f.mu.Lock()
		if r.Header.Get("Mcp-Session-Id") == f.session {
			f.deleted++
		}
		f.mu.Unlock()
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	var in rpcIn
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&in); err != nil {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	id, _ := in.ID.Int64()
	switch in.Method {
	case methodDiscover:
		http.Error(w, "no such method", cmp.Or(f.discoverStatus, http.StatusNotFound))
	case methodInitialize:
		if f.session != "" {
			w.Header().Set("Mcp-Session-Id", f.session)
		}
		writeResult(w, id, `{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"fake","version":"0"}}`)
	case methodInitialized:
		w.WriteHeader(http.StatusAccepted)
	case methodToolsList:
		f.mu.Lock()
		f.seenSession, f.seenVersion = r.Header.Get("Mcp-Session-Id"), r.Header.Get("MCP-Protocol-Version")
		f.mu.Unlock()
		f.tools(w, id, in.Params.Cursor)
	default:
		http.Error(w, "unexpected method "+in.Method, http.StatusTeapot)
	}
}

// writeResult writes a JSON-RPC result whose JSON text is given verbatim, so
// tests can send bytes encoding/json would never produce.
func writeResult(w http.ResponseWriter, id int64, result string) {
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%d,"result":%s}`, id, result)
}

// toolsJSON is a tools/list result with n small tools named prefix0..n-1 and
// nextCursor next ("" for none).
func toolsJSON(prefix string, n int, next string) string {
	var b strings.Builder
	b.WriteString(`{"tools":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"name":"%s%d","description":"tool %d","inputSchema":{"type":"object"}}`, prefix, i, i)
	}
	b.WriteByte(']')
	if next != "" {
		fmt.Fprintf(&b, `,"nextCursor":%q`, next)
	}
	b.WriteByte('}')
	return b.String()
}
