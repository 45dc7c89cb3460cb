package crawl_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/histor-observer/histor/crawl/registry/registrytest"
)

// gate holds every request until it is opened, and says when the first one
// arrived.
type gate struct {
	arrived chan struct{}
	open    chan struct{}
	next    http.Handler
}

func (g *gate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	select {
	case g.arrived <- struct{}{}:
	default:
	}
	select {
	case <-g.open:
	case <-r.Context().Done():
		return
	}
	g.next.ServeHTTP(w, r)
}

// TestProgressWhileRunning: Progress reports nothing before and after a
// crawl, and while one is held mid-way it reports every target of the crawl
// and fewer than all of them done.
func TestProgressWhileRunning(t *testing.T) {
	e := newEnv(t)
	up := serve(t, stateless(toolServer(baseTools)))
	g := &gate{arrived: make(chan struct{}, 1), open: make(chan struct{}), next: stateless(toolServer(baseTools))}
	held := serve(t, g)
	reg := registrytest.Server(t, []registrytest.Entry{
		{Name: "io.example/up", Remotes: []registrytest.Remote{{Type: "streamable-http", URL: up.URL + "/mcp"}}},
		{Name: "io.example/held", Remotes: []registrytest.Remote{{Type: "streamable-http", URL: held.URL + "/mcp"}}},
		{Name: "io.example/templated", Remotes: []registrytest.Remote{{Type: "streamable-http", URL: "https://{tenant}.example.com/mcp"}}},
	})
	c := e.crawler(t, reg.URL, nil)
	if p, ok := c.Progress(); ok {
		t.Fatalf("progress %+v before any crawl", p)
	}
	done := make(chan error, 1)
	go func() {
		_, err := c.Run(context.Background())
		done <- err
	}()
	<-g.arrived
	p, ok := c.Progress()
	if !ok || p.Of != 3 || p.Done >= p.Of {
		t.Errorf("mid-crawl progress %+v (reported %v), want 3 targets, fewer done", p, ok)
	}
	close(g.open)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if p, ok := c.Progress(); ok {
		t.Errorf("progress %+v after the crawl ended", p)
	}
}
