package node

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"
)

// Sizes of the /check benchmark: targets known to the node (sharing
// catalogtest.Populate's 100 tool sets, each kept as evidence, so each is
// scanned once and then answered from the cache) and concurrent clients.
const (
	benchTargets = 10_000
	benchClients = 64
)

// benchNode is the node serveCheckBench opened last.
var benchNode *Node

// serveCheckBench opens a node whose own crawl state holds benchTargets
// targets, answered through its own catalog (check.CatalogTargets, as in
// production), and serves it on loopback; it returns the base URL and the
// request bodies, one per target, each naming the target's current digest.
func serveCheckBench(b *testing.B) (string, [][]byte) {
	nd := populatedNode(b, benchTargets, Config{
		MaxInFlight: MaxMaxInFlight,
		// Limits out of the way: every request comes from 127.0.0.1. (The
		// first crawl-wide scan of each set still runs, once, while warming.)
		ChecksPerMinute: -1, ScansPerHour: maxCheckRate,
	})
	bodies := make([][]byte, benchTargets)
	for i := range bodies {
		ep := fmt.Sprintf("https://host%03d.example.com/mcp/%05d", i%500, i)
		s := nd.catalog.Lookup(ep, "")
		if s == nil || s.Obs.ToolSetDigest == "" {
			b.Fatalf("the catalog has no digest for %s", ep)
		}
		bodies[i] = fmt.Appendf(nil, `{"endpoint":%q,"toolSetDigest":%q}`, ep, s.Obs.ToolSetDigest)
	}
	benchNode = nd
	base := serveHandler(b, nil, nd)
	for _, body := range bodies[:100] { // one target of each tool set: each set is scanned once, here
		if answer := postRead(b, base+"/api/v1/check", body); !bytes.Contains(answer, []byte(`"match":"same"`)) {
			b.Fatalf("the bench's check is not answered same: %s", answer)
		}
	}
	return base, bodies
}

// postRead posts body to url and returns the answer.
func postRead(b *testing.B, url string, body []byte) []byte {
	resp, err := http.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		b.Fatalf("POST %s: %d %v", url, resp.StatusCode, err)
	}
	return answer
}

// runPOST posts random bodies from benchClients concurrent clients and
// reports requests per second and the 99th-percentile latency.
func runPOST(b *testing.B, url, unit string, bodies [][]byte) {
	client := benchClient()
	for i := range 2000 { // warm the connections, and the scan cache
		post(b, client, url, bodies[i%len(bodies)])
	}
	var mu sync.Mutex
	var lat []time.Duration
	b.SetParallelism((benchClients + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		r := rand.New(rand.NewPCG(rand.Uint64(), 0))
		mine := make([]time.Duration, 0, 1024)
		for pb.Next() {
			t0 := time.Now()
			post(b, client, url, bodies[r.IntN(len(bodies))])
			mine = append(mine, time.Since(t0))
		}
		mu.Lock()
		lat = append(lat, mine...)
		mu.Unlock()
	})
	elapsed := time.Since(start)
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), unit)
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
}

func post(b *testing.B, c *http.Client, url string, body []byte) {
	resp, err := c.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		b.Fatal(err)
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK {
		b.Fatalf("POST %s: %d %v", url, resp.StatusCode, err)
	}
}

// BenchmarkHTTPCheck answers /check for known digests: a signed "same" with
// the cached pattern scan, over loopback HTTP.
// The node is built once, outside the timed sub-benchmark.
func BenchmarkHTTPCheck(b *testing.B) {
	base, bodies := serveCheckBench(b)
	b.Run("same", func(b *testing.B) { runPOST(b, base+"/api/v1/check", "checks/s", bodies) })
}

// BenchmarkHTTPCheckBare is the same-run baseline: a bare net/http handler
// that reads the same bodies and answers as many bytes as a check answer.
func BenchmarkHTTPCheckBare(b *testing.B) {
	base, bodies := serveCheckBench(b)
	answer := postRead(b, base+"/api/v1/check", bodies[0])
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Write(answer)
	})
	bare := serveHandler(b, h, nil)
	b.Run("same", func(b *testing.B) { runPOST(b, bare, "req/s", bodies) })
}

// BenchmarkCheckHandler is /check without the network: what the lookup,
// the answer and its signature cost.
func BenchmarkCheckHandler(b *testing.B) {
	_, bodies := serveCheckBench(b)
	h := benchNode.Handler()
	b.Run("same", func(b *testing.B) { runHandler(b, h, bodies) })
}

func runHandler(b *testing.B, h http.Handler, bodies [][]byte) {
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		r := rand.New(rand.NewPCG(rand.Uint64(), 0))
		w := &discardWriter{h: http.Header{}}
		for pb.Next() {
			req, _ := http.NewRequest("POST", "/api/v1/check", bytes.NewReader(bodies[r.IntN(len(bodies))]))
			req.RemoteAddr = "127.0.0.1:1"
			w.code = 0
			h.ServeHTTP(w, req)
			if w.code != 0 && w.code != http.StatusOK {
				b.Fatalf("status %d", w.code)
			}
		}
	})
}
