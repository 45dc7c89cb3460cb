package node

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/histor-observer/histor/crawl"
	"github.com/histor-observer/histor/crawl/registry/registrytest"
	"github.com/histor-observer/histor/internal/promset/promtest"
	"github.com/histor-observer/histor/log/mtl"
	"github.com/histor-observer/histor/node/peers"
)

// benchFleet is a registry of many MCP servers (Go SDK, stateless streamable HTTP) spread
// over 64 loopback addresses, so the crawler's two connections per host do not serialise
// them: the stand-in for a real registry's thousands of remote servers.
type benchFleet struct {
	mu   sync.Mutex
	rev  []int
	urls []string
	reg  string
}

const benchFleetHosts = 64

func newBenchFleet(tb testing.TB, n int) *benchFleet {
	f := &benchFleet{rev: make([]int, n)}
	var bases []string
	for h := range benchFleetHosts {
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.%d:0", h+2))
		if err != nil {
			tb.Fatal(err)
		}
		srv := &http.Server{Handler: mcp.NewStreamableHTTPHandler(f.server, &mcp.StreamableHTTPOptions{Stateless: true})}
		go srv.Serve(ln)
		tb.Cleanup(func() { srv.Close() })
		bases = append(bases, "http://"+ln.Addr().String())
	}
	var entries []registrytest.Entry
	for i := range n {
		u := fmt.Sprintf("%s/mcp/%d", bases[i%benchFleetHosts], i)
		f.urls = append(f.urls, u)
		entries = append(entries, registrytest.Entry{Name: benchFleetName(i), Remotes: []registrytest.Remote{{Type: "streamable-http", URL: u}}})
	}
	f.reg = registrytest.ServerWith(tb, entries, registrytest.Config{PageSize: 100}).URL
	return f
}

func benchFleetName(i int) string { return fmt.Sprintf("io.bench/fleet-%d", i) }

func (f *benchFleet) id(i int) string { return mtl.ServerID(benchFleetName(i), f.urls[i]) }

// server is the MCP server at /mcp/<i>: one tool whose description names its revision.
func (f *benchFleet) server(r *http.Request) *mcp.Server {
	i, _ := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/mcp/"))
	f.mu.Lock()
	rev := f.rev[i%len(f.rev)]
	f.mu.Unlock()
	s := mcp.NewServer(&mcp.Implementation{Name: "fleet", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "lookup", Description: fmt.Sprintf("Looks up record %d, revision %d.", i, rev),
		InputSchema: &jsonschema.Schema{Type: "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { panic("a tool was called") })
	return s
}

func (f *benchFleet) change(i int) {
	f.mu.Lock()
	f.rev[i]++
	f.mu.Unlock()
}

func benchServers(b *testing.B) int {
	if v := os.Getenv("HISTOR_BENCH_SERVERS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			b.Fatalf("HISTOR_BENCH_SERVERS=%q", v)
		}
		return n
	}
	return 20_000
}

// BenchmarkMirrorFederation runs three observers in this process on loopback libp2p over
// one registry of HISTOR_BENCH_SERVERS servers (default 20,000), each the others'
// descriptor peer. Each iteration has all three crawl (the first crawl sees every server;
// later ones a change of 1% of them) and times from the last crawl's end until every
// node's peer view lists all three observers, with the digest each saw, for every server.
// It reports that time, each crawl's time, the entries each node mirrored and the bytes of
// entry bundles it read, per iteration, and checks the answer of /api/v1/servers/<id> for a
// sample of servers on every node.
func BenchmarkMirrorFederation(b *testing.B) {
	n := benchServers(b)
	fleet := newBenchFleet(b, n)
	nodes := []*benchObserver{newBenchObserver(b, 0), newBenchObserver(b, 1), newBenchObserver(b, 2)}
	descs := make([]string, len(nodes))
	for i, bn := range nodes {
		descs[i] = bn.descriptorFile(b)
	}
	for i, bn := range nodes {
		var ps []string
		for j := range nodes {
			if j != i {
				ps = append(ps, descs[j])
			}
		}
		bn.start(b, Config{Peers: ps, Crawl: crawl.Config{Registry: fleet.reg, AllowPrivateTargets: true, Workers: 32}})
	}
	var converge, crawlTime time.Duration
	var entries, bytes float64
	for it := 0; it < b.N; it++ {
		if it > 0 {
			for k := 0; k < n/100; k++ {
				fleet.change((it*7919 + k*101) % n)
			}
		}
		before := nodesMirrored(b, nodes)
		var lastEnd time.Time
		for _, bn := range nodes {
			start := time.Now()
			bn.crawl(b)
			crawlTime += time.Since(start)
			lastEnd = time.Now()
		}
		waitFor(b, 10*time.Minute, "every view lists every observer of every server", func() bool { return viewsComplete(nodes, fleet, n) })
		converge += time.Since(lastEnd)
		after := nodesMirrored(b, nodes)
		entries += (after[0] - before[0]) / float64(len(nodes))
		bytes += (after[1] - before[1]) / float64(len(nodes))
	}
	b.StopTimer()
	sampleAnswers(b, nodes, fleet, n)
	b.ReportMetric(converge.Seconds()/float64(b.N), "s-after-last-crawl")
	b.ReportMetric(crawlTime.Seconds()/float64(b.N*len(nodes)), "s/crawl")
	b.ReportMetric(entries/float64(b.N), "entries-mirrored/node")
	b.ReportMetric(bytes/float64(b.N), "bundle-bytes/node")
	b.ReportMetric(float64(n), "servers")
}

// viewsComplete says whether every node's view holds, for every server, each node's
// current observation: three observers, one digest.
func viewsComplete(nodes []*benchObserver, fleet *benchFleet, n int) bool {
	for _, bn := range nodes {
		view := bn.node.fed.Peers()
		for i := range n {
			a := view.Agreement(fleet.id(i))
			if a.Counts.Observers != len(nodes) || a.Status != peers.Unanimous {
				return false
			}
		}
	}
	return true
}

// nodesMirrored sums the nodes' mirrored entries and bundle bytes.
func nodesMirrored(tb testing.TB, nodes []*benchObserver) [2]float64 {
	var out [2]float64
	for _, bn := range nodes {
		for i, name := range []string{"histor_mirror_entries_total", "histor_mirror_bundle_bytes_total"} {
			out[i] += promtest.Sum(tb, bn.reg, name)
		}
	}
	return out
}

// sampleAnswers checks /api/v1/servers/<id> of 100 servers on every node: three observers.
func sampleAnswers(tb testing.TB, nodes []*benchObserver, fleet *benchFleet, n int) {
	for _, bn := range nodes {
		for k := 0; k < 100; k++ {
			i := k * n / 100
			req, _ := http.NewRequest(http.MethodGet, "/api/v1/servers/"+fleet.id(i), nil)
			w := httptest.NewRecorder()
			bn.node.Handler().ServeHTTP(w, req)
			var page struct {
				Observers []json.RawMessage `json:"observers"`
			}
			if err := json.Unmarshal(w.Body.Bytes(), &page); err != nil || len(page.Observers) != len(nodes) {
				tb.Fatalf("observer %d, server %d: %d observers (%v): %.300s", bn.i, i, len(page.Observers), err, w.Body.String())
			}
		}
	}
}
