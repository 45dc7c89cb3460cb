package node

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/histor-observer/histor/internal/proofs"
	hlog "github.com/histor-observer/histor/log"
	"github.com/histor-observer/histor/log/logtest"
)

// bigLeaves is the size of the log the HTTP benchmarks and the memory test
// serve.
const bigLeaves = 1_000_000

var (
	bigOnce sync.Once
	bigDir  string // a node data directory holding a bigLeaves log; removed by TestMain
	keepDir string // the same, named by HISTOR_BENCH_DIR and kept
	bigErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if bigDir != "" {
		os.RemoveAll(bigDir)
	}
	os.Exit(code)
}

// bigDataDir builds, once per process, a node data directory whose log holds
// bigLeaves labels (logtest.Build's small labels), and returns it closed.
func bigDataDir(tb testing.TB) string {
	tb.Helper()
	bigOnce.Do(func() {
		if keep := os.Getenv("HISTOR_BENCH_DIR"); keep != "" {
			// Reuse a directory across runs (it is kept): building a
			// million leaves takes about a minute.
			if _, err := os.Stat(keep + "/log"); err == nil {
				keepDir = keep
				return
			}
			keepDir, bigErr = keep, os.MkdirAll(keep, 0o700)
		} else {
			bigDir, bigErr = os.MkdirTemp("", "histor-node-1m-")
		}
		if bigErr != nil {
			return
		}
		dir := bigDir + keepDir
		nd, err := New(Config{DataDir: dir})
		if err != nil {
			bigErr = err
			return
		}
		start := time.Now()
		l := logtest.Build(tb, nd.LogDir(), bigLeaves, hlog.Config{
			Origin: nd.cfg.LogOrigin, Key: nd.id.logKey, DID: nd.id.did, Logger: nd.cfg.Logger,
		})
		bigErr = l.Close()
		tb.Logf("built a %d-leaf log in %v", bigLeaves, time.Since(start).Round(time.Millisecond))
	})
	if bigErr != nil {
		tb.Fatalf("building the big log: %v", bigErr)
	}
	return bigDir + keepDir
}

// serveBig opens the big log in a node served over real loopback TCP and
// returns its base URL.
func serveBig(b *testing.B) string {
	nd, err := New(Config{DataDir: bigDataDir(b), MaxInFlight: MaxMaxInFlight})
	if err != nil {
		b.Fatal(err)
	}
	if err := nd.Open(context.Background()); err != nil {
		b.Fatal(err)
	}
	return serveHandler(b, nil, nd)
}

// serveHandler serves h (or the node's API) on a loopback listener until
// the benchmark ends.
func serveHandler(b *testing.B, h http.Handler, nd *Node) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if nd != nil {
			nd.Serve(ctx, ln)
			return
		}
		srv := &http.Server{Handler: h}
		go srv.Serve(ln)
		<-ctx.Done()
		srv.Close()
	}()
	b.Cleanup(func() {
		cancel()
		<-done
		if nd != nil {
			nd.Close()
		}
	})
	return "http://" + ln.Addr().String()
}

// benchClient keeps one connection per parallel worker alive.
func benchClient() *http.Client {
	return &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256, DisableCompression: true}}
}

// proofPath is an inclusion proof request for a random leaf.
func proofPath(r *rand.Rand) string {
	return fmt.Sprintf("/api/v1/log/proof/inclusion?leaf_index=%d&tree_size=%d", r.Uint64N(bigLeaves), bigLeaves)
}

// runHTTP fires GETs from parallel workers and reports requests per second
// and the 99th-percentile latency.
func runHTTP(b *testing.B, base, unit string, path func(*rand.Rand) string) {
	client := benchClient()
	for i := range 2000 { // warm the connections and the block cache
		get(b, client, base+path(rand.New(rand.NewPCG(uint64(i), 0))))
	}
	var mu sync.Mutex
	var lat []time.Duration
	b.SetParallelism(2) // two connections per core: several clients, a shallow queue
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		r := rand.New(rand.NewPCG(rand.Uint64(), 0))
		mine := make([]time.Duration, 0, 1024)
		for pb.Next() {
			t0 := time.Now()
			get(b, client, base+path(r))
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

func get(b *testing.B, c *http.Client, url string) {
	resp, err := c.Get(url)
	if err != nil {
		b.Fatal(err)
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK {
		b.Fatalf("GET %s: %d %v", url, resp.StatusCode, err)
	}
}

// BenchmarkHTTPInclusionProof1M serves inclusion proofs for random leaves of
// a million-leaf log over loopback HTTP.
func BenchmarkHTTPInclusionProof1M(b *testing.B) {
	runHTTP(b, serveBig(b), "proofs/s", proofPath)
}

// BenchmarkHTTPBareHandler is the same-run baseline: a bare net/http handler
// answering a body of the same size as a proof answer at a million leaves
// (20 hashes).
func BenchmarkHTTPBareHandler(b *testing.B) {
	body := proofs.AppendHexList([]byte(`{"leafIndex":123456,"treeSize":1000000,"proof":`), make([][32]byte, 20))
	body = append(body, '}')
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(body)
	})
	runHTTP(b, serveHandler(b, h, nil), "req/s", proofPath)
}

// BenchmarkInclusionHandler1M is the proof handler without the network: what
// the log and the encoding cost per proof.
func BenchmarkInclusionHandler1M(b *testing.B) {
	nd, err := New(Config{DataDir: bigDataDir(b), MaxInFlight: MaxMaxInFlight})
	if err != nil {
		b.Fatal(err)
	}
	if err := nd.Open(context.Background()); err != nil {
		b.Fatal(err)
	}
	defer nd.Close()
	h := nd.Handler()
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		r := rand.New(rand.NewPCG(rand.Uint64(), 0))
		w := &discardWriter{h: http.Header{}}
		for pb.Next() {
			req, _ := http.NewRequest("GET", proofPath(r), nil)
			w.code = 0
			h.ServeHTTP(w, req)
			if w.code != 0 && w.code != http.StatusOK {
				b.Fatalf("status %d", w.code)
			}
		}
	})
}

// discardWriter is a ResponseWriter that keeps only the status.
type discardWriter struct {
	h    http.Header
	code int
}

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) Write(p []byte) (int, error) { return len(p), nil }
func (w *discardWriter) WriteHeader(code int)        { w.code = code }
