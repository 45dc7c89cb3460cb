package node

import (
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/histor-observer/histor/node/catalog/catalogtest"
)

// catalogServers is the size of the catalog the reading-API benchmarks serve.
const catalogServers = 20_000

// populatedNode opens a node in a fresh directory whose own crawl state
// holds n targets (catalogtest.Populate, written as the crawl writes them)
// and reloads its own catalog, as a crawl does on commit: the reading API
// and /check then answer from exactly what production answers from.
func populatedNode(b *testing.B, n int, cfg Config) *Node {
	cfg.DataDir = b.TempDir()
	nd, err := New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	if err := nd.Open(b.Context()); err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	catalogtest.Populate(b, nd.state, nd.Log(), n)
	built := time.Since(start)
	start = time.Now()
	if err := nd.catalog.Reload(); err != nil {
		b.Fatal(err)
	}
	b.Logf("populated %d servers in %v; catalog loaded in %v", n,
		built.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
	return nd
}

// serveCatalog builds a node whose crawl state holds catalogServers targets
// and serves it over real loopback TCP until b ends.
func serveCatalog(b *testing.B) string {
	nd := populatedNode(b, catalogServers, Config{MaxInFlight: MaxMaxInFlight})
	return serveHandler(b, nil, nd)
}

// serversQueries are the /api/v1/servers requests the search benchmark
// draws from: text matching one server, forty, or all of them; each state
// filter; deep pages; the largest page.
var serversQueries = []func(r *rand.Rand) string{
	func(r *rand.Rand) string { return fmt.Sprintf("q=server-%05d", r.IntN(catalogServers)) },
	func(r *rand.Rand) string { return fmt.Sprintf("q=host%03d.", r.IntN(500)) },
	func(r *rand.Rand) string { return "q=example&state=changed" },
	func(r *rand.Rand) string { return fmt.Sprintf("state=pinned&offset=%d", r.IntN(catalogServers)) },
	func(r *rand.Rand) string { return "state=flagged" },
	func(r *rand.Rand) string { return "state=unobserved" },
	func(r *rand.Rand) string { return "q=Title+of&limit=200" },
	func(r *rand.Rand) string { return "q=no-such-server" },
}

// serversPath draws a request; k=<kind> names its kind for the bare
// baseline (the API ignores parameters it does not know).
func serversPath(r *rand.Rand) string {
	k := r.IntN(len(serversQueries))
	return fmt.Sprintf("/api/v1/servers?%s&k=%d", serversQueries[k](r), k)
}

// bareServers is a bare net/http handler that answers each kind of
// serversPath request with the bytes the node answered to one of that
// kind: the same bytes on the wire without the search and the encoding.
func bareServers(b *testing.B, base string) http.Handler {
	answers := make([][]byte, len(serversQueries))
	for k, q := range serversQueries {
		resp, err := http.Get(base + "/api/v1/servers?" + q(rand.New(rand.NewPCG(uint64(k), 0))))
		if err != nil {
			b.Fatal(err)
		}
		answers[k], err = io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			b.Fatal(err)
		}
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		k, _ := strconv.Atoi(r.URL.Query().Get("k"))
		w.Header().Set("Content-Type", "application/json")
		w.Write(answers[k])
	})
}

func serverPagePath(r *rand.Rand) string {
	i := r.IntN(catalogServers)
	t := catalogtest.Target(fmt.Sprintf("io.example/server-%05d", i), fmt.Sprintf("https://host%03d.example.com/mcp/%05d", i%500, i))
	return "/api/v1/servers/" + t.ID
}

// BenchmarkHTTPReadAPI20k serves a 20,000-server catalog over loopback
// HTTP: server lists (search, filters, pages) and server pages, and then
// the same list requests answered by a bare handler with the same bytes
// (servers-bare, the same-run baseline; BenchmarkHTTPBareHandler is the
// small-answer one).
func BenchmarkHTTPReadAPI20k(b *testing.B) {
	if testing.Short() {
		b.Skip("builds a 20,000-server crawl state; not in -short")
	}
	base := serveCatalog(b)
	b.Run("servers", func(b *testing.B) { runHTTP(b, base, "req/s", serversPath) })
	b.Run("server-page", func(b *testing.B) { runHTTP(b, base, "req/s", serverPagePath) })
	bare := serveHandler(b, bareServers(b, base), nil)
	b.Run("servers-bare", func(b *testing.B) { runHTTP(b, bare, "req/s", serversPath) })
}
