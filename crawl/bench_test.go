package crawl_test

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/histor-observer/histor/crawl"
	"github.com/histor-observer/histor/crawl/guard"
	"github.com/histor-observer/histor/crawl/registry/registrytest"
)

const (
	benchEndpoints = 10000
	benchHosts     = 500
	benchLatency   = 100 * time.Millisecond
	benchWorkers   = 256
)

// benchFleet is benchHosts fixture MCP servers on loopback, one listener per
// host name, each counting its open connections.
type benchFleet struct {
	addrs   map[string]netip.AddrPort // host name → listener
	bases   []string
	maxConn atomic.Int32 // most connections one host ever had open at once
}

func newBenchFleet(tb testing.TB) *benchFleet {
	f := &benchFleet{addrs: map[string]netip.AddrPort{}}
	for i := range benchHosts {
		name := fmt.Sprintf("h%03d.bench.test", i)
		var open atomic.Int32
		srv := httptest.NewUnstartedServer(http.HandlerFunc(benchMCP))
		srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
			switch s {
			case http.StateNew:
				n := open.Add(1)
				for {
					m := f.maxConn.Load()
					if n <= m || f.maxConn.CompareAndSwap(m, n) {
						break
					}
				}
			case http.StateClosed, http.StateHijacked:
				open.Add(-1)
			}
		}
		srv.Start()
		tb.Cleanup(srv.Close)
		ap := netip.MustParseAddrPort(srv.Listener.Addr().String())
		f.addrs[name] = ap
		f.bases = append(f.bases, fmt.Sprintf("http://%s:%d", name, ap.Port()))
	}
	return f
}

// LookupNetIP is the fake resolver: every bench host name is loopback.
func (f *benchFleet) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if ap, ok := f.addrs[host]; ok {
		return []netip.Addr{ap.Addr()}, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

var benchTools = []byte(`[{"name":"get_weather","description":"Returns the current weather for a city.","inputSchema":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}},` +
	`{"name":"get_forecast","description":"Returns a five day forecast for a city.","inputSchema":{"type":"object","properties":{"city":{"type":"string"},"days":{"type":"integer"}}}},` +
	`{"name":"list_cities","description":"Lists the cities with weather data.","inputSchema":{"type":"object"}}]`)

// benchMCP is a minimal modern (2026-07-28) MCP server: server/discover and
// tools/list, each answered after benchLatency.
func benchMCP(w http.ResponseWriter, r *http.Request) {
	var req struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<16)).Decode(&req); err != nil {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	time.Sleep(benchLatency)
	var result string
	switch req.Method {
	case "server/discover":
		result = `{"supportedVersions":["2026-07-28"],"capabilities":{"tools":{}},"resultType":"complete","ttlMs":0,"cacheScope":"public"}`
	case "tools/list":
		result = `{"tools":` + string(benchTools) + `}`
	default:
		w.WriteHeader(http.StatusAccepted)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":%s}`, req.ID, result)
}

// benchName gives each server its own namespace and a last segment that is
// no near-duplicate of another's, as real registry names mostly are.
// Generate's names (server-000001, server-000002, …) are all within edit
// distance 2 of each other, the lookalike index's worst case (the
// names=generated sub-benchmark).
func benchName(i int) string {
	h := sha256.Sum256([]byte(strconv.Itoa(i)))
	return fmt.Sprintf("io.bench.ns%05d/%x", i, h[:6])
}

// cpuTime is the process's user + system CPU so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// baseline makes the same two POSTs per endpoint as an observation, with a
// plain client and the same concurrency and per-host bound, and returns the
// CPU it took.
func baseline(tb testing.TB, endpoints []string, f *benchFleet) time.Duration {
	dialer := &net.Dialer{}
	tr := &http.Transport{
		MaxConnsPerHost: 2, MaxIdleConnsPerHost: 2,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			host, _, _ := net.SplitHostPort(addr)
			return dialer.DialContext(ctx, network, f.addrs[host].String())
		},
	}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	work := make(chan string)
	var wg sync.WaitGroup
	var failed atomic.Int32
	start := cpuTime()
	for range benchWorkers {
		wg.Go(func() {
			for ep := range work {
				for _, m := range []string{"server/discover", "tools/list"} {
					body := `{"jsonrpc":"2.0","id":1,"method":"` + m + `","params":{}}`
					resp, err := client.Post(ep, "application/json", strings.NewReader(body))
					if err != nil {
						failed.Add(1)
						continue
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			}
		})
	}
	for _, ep := range endpoints {
		work <- ep
	}
	close(work)
	wg.Wait()
	if failed.Load() > 0 {
		tb.Fatalf("%d baseline round trips failed", failed.Load())
	}
	return cpuTime() - start
}

// BenchmarkCrawl10k crawls 10,000 fixture endpoints on 500 host names with
// 100 ms per response and reports wall time and CPU per observation beyond
// a bare HTTP round-trip baseline over the same fixture. The sub-benchmark
// names=distinct gives servers names as varied as real ones; names=generated
// keeps registrytest.Generate's server-000001… names, all near-duplicates of
// each other, the lookalike index's worst case.
//
//	go test -run '^$' -bench 'BenchmarkCrawl10k/names=distinct' -benchtime 1x ./crawl/
func BenchmarkCrawl10k(b *testing.B) {
	for _, distinct := range []bool{true, false} {
		b.Run(fmt.Sprintf("names=%s", map[bool]string{true: "distinct", false: "generated"}[distinct]), func(b *testing.B) {
			for range b.N {
				benchCrawl(b, distinct)
			}
		})
	}
}

// benchCrawl runs one crawl over a fresh fleet, so the connections counted
// are this crawl's alone, then the baseline over the same fleet.
func benchCrawl(b *testing.B, distinct bool) {
	b.StopTimer()
	f := newBenchFleet(b)
	entries := registrytest.Generate(benchEndpoints, f.bases)
	if distinct {
		for i := range entries {
			entries[i].Name = benchName(i)
		}
	}
	reg := registrytest.Server(b, entries)
	e := newEnv(b)
	c := e.crawler(b, reg.URL, func(cfg *crawl.Config) {
		cfg.Workers = benchWorkers
		cfg.Guard = guard.Config{Resolver: f}
		cfg.Deadline = 30 * time.Second
	})
	defer c.Close()
	b.StartTimer()
	cpu0, t0 := cpuTime(), time.Now()
	sum, err := c.Run(context.Background())
	wall, cpu := time.Since(t0), cpuTime()-cpu0
	b.StopTimer()
	if err != nil {
		b.Fatal(err)
	}
	if sum.ByStatus["ok"] != benchEndpoints {
		b.Fatalf("statuses %v, want %d ok", sum.ByStatus, benchEndpoints)
	}
	maxConns := f.maxConn.Load()
	if maxConns > 2 {
		b.Fatalf("a host had %d connections open at once", maxConns)
	}
	var endpoints []string
	for _, e := range entries {
		endpoints = append(endpoints, e.Remotes[0].URL)
	}
	base := baseline(b, endpoints, f)
	b.ReportMetric(wall.Seconds(), "wall-s")
	b.ReportMetric(float64(cpu.Microseconds())/benchEndpoints/1000, "cpu-ms/obs")
	b.ReportMetric(float64(base.Microseconds())/benchEndpoints/1000, "baseline-cpu-ms/obs")
	b.ReportMetric(float64((cpu-base).Microseconds())/benchEndpoints/1000, "extra-cpu-ms/obs")
	b.ReportMetric(float64(sum.Labels), "labels")
	b.ReportMetric(float64(maxConns), "max-conns/host")
}
