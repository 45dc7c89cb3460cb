package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/histor-observer/histor/log/mtl"
)

// fleet is the MCP servers the registry fixture lists: stateless streamable HTTP servers
// (MCP Go SDK) spread over many loopback addresses, so the crawler's two connections per
// host never serialise them. Each endpoint's tool descriptions name its revision, so a
// change is a new revision; an endpoint can answer 500, and a whole host can refuse
// connections (its listener closed).
type fleet struct {
	mu    sync.Mutex
	eps   []endpoint // guarded by mu
	hosts []*host    // guarded by mu
}

// endpoint is one MCP server of the fleet.
type endpoint struct {
	name, url string
	host      int
	rev       int
	server    *mcp.Server // of rev; rebuilt after a change
	failing   bool        // answers 500
	changedAt time.Time   // the last change of its tools (zero: never)
	downAt    time.Time   // the last time it went down, itself or its host (zero: never)
	upAt      time.Time   // the last time it came back
}

// host is one loopback address with its listener; a closed one refuses connections.
type host struct {
	addr string // ip:port, fixed once listening
	srv  *http.Server
	up   bool
}

func (e endpoint) id() string { return mtl.ServerID(e.name, e.url) }

// hostCount spreads n endpoints over about 8 per host, between 8 and 250 addresses
// (127.0.0.2 to 127.0.0.251; the nodes use 127.0.0.1).
func hostCount(n int) int { return min(max(n/8, 8), 250) }

// startFleet listens on every host and lays out n endpoints round-robin over them.
func startFleet(n int) (*fleet, error) {
	f := &fleet{}
	for h := range hostCount(n) {
		hs := &host{addr: fmt.Sprintf("127.0.0.%d:0", h+2)}
		f.hosts = append(f.hosts, hs)
		if err := f.listen(h); err != nil {
			return nil, errors.Join(err, f.close())
		}
	}
	for i := range n {
		h := i % len(f.hosts)
		e := endpoint{name: fmt.Sprintf("io.histor.soak/server-%05d", i), host: h,
			url: fmt.Sprintf("http://%s/mcp/%d", f.hosts[h].addr, i)}
		e.server = newMCPServer(i, 0)
		f.eps = append(f.eps, e)
	}
	return f, nil
}

// listen (re)opens host h's listener on its address; the caller holds mu or owns f alone.
func (f *fleet) listen(h int) error {
	hs := f.hosts[h]
	var ln net.Listener
	var err error
	for try := 0; try < 20; try++ { // a port just closed may take a moment to be free again
		if ln, err = net.Listen("tcp", hs.addr); err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		return fmt.Errorf("listening for MCP host %d on %s: %w", h, hs.addr, err)
	}
	hs.addr = ln.Addr().String()
	hs.srv = &http.Server{Handler: f.handler(), ReadHeaderTimeout: 10 * time.Second}
	hs.up = true
	go hs.srv.Serve(ln)
	return nil
}

// refuse closes host h's listener and connections: its endpoints refuse connections.
func (f *fleet) refuse(h int) {
	hs := f.hosts[h]
	hs.srv.Close()
	hs.up = false
}

func (f *fleet) close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	var errs []error
	for _, hs := range f.hosts {
		if hs.up {
			errs = append(errs, hs.srv.Close())
			hs.up = false
		}
	}
	return errors.Join(errs...)
}

// handler serves /mcp/<i> of every host: 500 for a failing endpoint, else its server.
func (f *fleet) handler() http.Handler {
	mcpHandler := mcp.NewStreamableHTTPHandler(func(r *http.Request) *mcp.Server {
		s, _ := f.server(r)
		return s
	}, &mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s, failing := f.server(r)
		switch {
		case s == nil:
			http.NotFound(w, r)
		case failing:
			http.Error(w, "soak fixture: this endpoint is failing for now", http.StatusInternalServerError)
		default:
			mcpHandler.ServeHTTP(w, r)
		}
	})
}

// server is the MCP server of the request's endpoint (nil for none) and whether it fails.
func (f *fleet) server(r *http.Request) (*mcp.Server, bool) {
	i, err := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/mcp/"))
	f.mu.Lock()
	defer f.mu.Unlock()
	if err != nil || i < 0 || i >= len(f.eps) {
		return nil, false
	}
	return f.eps[i].server, f.eps[i].failing
}

// newMCPServer is endpoint i at revision rev: one to three tools, each description naming
// the revision, so every change is a change of description.
func newMCPServer(i, rev int) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: fmt.Sprintf("soak-%d", i), Version: "1.0.0"}, nil)
	names := []string{"lookup", "list_items", "describe"}
	for k := range 1 + i%len(names) {
		s.AddTool(&mcp.Tool{
			Name:        names[k],
			Description: fmt.Sprintf("Tool %s of soak server %d, revision %d.", names[k], i, rev),
			InputSchema: &jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{
				"query": {Type: "string", Description: "what to look for"},
			}},
		}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return nil, errors.New("the soak fixture answers tools/list only")
		})
	}
	return s
}

// endpoints returns a copy of every endpoint's state.
func (f *fleet) endpoints() []endpoint {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]endpoint(nil), f.eps...)
}

// hostUp says whether host h accepts connections.
func (f *fleet) hostUp(h int) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.hosts[h].up
}
