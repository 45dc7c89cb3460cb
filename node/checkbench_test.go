package node

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	hlog "github.com/histor-observer/histor/log"
	"github.com/histor-observer/histor/log/mtl"
)

// Sizes of the /check benchmark: targets known to the node, distinct tool
// sets among them (each kept as evidence, so each is scanned once and then
// answered from the cache), and concurrent clients.
const (
	benchTargets  = 10_000
	benchSets     = 100
	benchClients  = 64
	benchEndpoint = "https://bench-%05d.example/mcp"
)

// benchNode is the node serveCheckBench opened last.
var benchNode *Node

// memTargets is an in-memory CheckTargets, standing in for the read model
// a busy node serves /check from.
type memTargets struct {
	byEndpoint map[string][]CheckTarget
}

func (m *memTargets) TargetsByEndpoint(e string) ([]CheckTarget, error) { return m.byEndpoint[e], nil }
func (m *memTargets) TargetsByName(string) ([]CheckTarget, error)       { return nil, nil }
func (m *memTargets) SeenBefore(string, string) (SeenBefore, bool, error) {
	return SeenBefore{}, false, nil
}

func benchToolSet(i int) []byte {
	return fmt.Appendf(nil, `[{"description":"Tool set %d: returns the weather for a city.","inputSchema":{"properties":{"city":{"type":"string"}},"type":"object"},"name":"weather"}]`, i)
}

// serveCheckBench opens a node whose /check knows benchTargets targets and
// serves it on loopback; it returns the base URL and the request bodies, one
// per target, each naming the target's current digest.
func serveCheckBench(b *testing.B) (string, [][]byte) {
	nd, err := New(Config{
		DataDir: b.TempDir(), MaxInFlight: MaxMaxInFlight,
		// Limits out of the way: every request comes from 127.0.0.1. (The
		// first crawl-wide scan of each set still runs, once, while warming.)
		ChecksPerMinute: -1, ScansPerHour: maxCheckRate,
	})
	if err != nil {
		b.Fatal(err)
	}
	mt := &memTargets{byEndpoint: map[string][]CheckTarget{}}
	if err := nd.Open(context.Background()); err != nil {
		b.Fatal(err)
	}
	nd.api.Load().check.targets = mt
	digests := make([]string, benchSets)
	ev := make([]hlog.Evidence, benchSets)
	for i := range digests {
		ev[i] = hlog.Evidence{Kind: "toolsets", Body: benchToolSet(i)}
		digests[i] = mtl.SRI(ev[i].Body)
	}
	if _, err := nd.Log().Append(context.Background(), []hlog.Entry{{ID: labelID(0), Label: makeLabel(0)}}, ev); err != nil {
		b.Fatal(err)
	}
	bodies := make([][]byte, benchTargets)
	for i := range bodies {
		ep := fmt.Sprintf(benchEndpoint, i)
		d := digests[i%benchSets]
		mt.byEndpoint[ep] = []CheckTarget{{
			ID: mtl.ServerID("io.example/bench", ep), Name: fmt.Sprintf("io.example/bench-%05d", i), Endpoint: ep,
			LastStatus: "ok", LastListed: fixedNow(), ToolSetDigest: d, SubjectDigest: "sha256-subject", ToolCount: 1,
			FirstPinned: fixedNow(), UnchangedSince: fixedNow(), LastObserved: fixedNow(), Observations: 12,
		}}
		bodies[i] = fmt.Appendf(nil, `{"endpoint":%q,"toolSetDigest":%q}`, ep, d)
	}
	benchNode = nd
	return serveHandler(b, nil, nd), bodies
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
func BenchmarkHTTPCheck(b *testing.B) {
	base, bodies := serveCheckBench(b)
	runPOST(b, base+"/api/v1/check", "checks/s", bodies)
}

// BenchmarkHTTPCheckBare is the same-run baseline: a bare net/http handler
// that reads the same bodies and answers as many bytes as a check answer.
func BenchmarkHTTPCheckBare(b *testing.B) {
	base, bodies := serveCheckBench(b)
	resp, err := http.Post(base+"/api/v1/check", "application/json", bytes.NewReader(bodies[0]))
	if err != nil {
		b.Fatal(err)
	}
	answer, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Write(answer)
	})
	runPOST(b, serveHandler(b, h, nil), "req/s", bodies)
}

// BenchmarkCheckHandler is /check without the network: what the lookup,
// the answer and its signature cost.
func BenchmarkCheckHandler(b *testing.B) {
	base, bodies := serveCheckBench(b)
	_ = base
	nd := benchNode
	h := nd.Handler()
	b.ReportAllocs()
	b.ResetTimer()
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
