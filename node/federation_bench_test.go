package node

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/histor-observer/histor/crawl"
	"github.com/histor-observer/histor/crawl/registry/registrytest"
	"github.com/histor-observer/histor/internal/promset/promtest"
	hlog "github.com/histor-observer/histor/log"
	"github.com/histor-observer/histor/log/awr"
	"github.com/histor-observer/histor/log/format"
	"github.com/histor-observer/histor/log/keys"
	"github.com/histor-observer/histor/witness"
)

// benchObservers is how many observers BenchmarkFederation runs:
// HISTOR_BENCH_OBSERVERS, by default the 20.
func benchObservers(b *testing.B) int {
	n := 20
	if s := os.Getenv("HISTOR_BENCH_OBSERVERS"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 5 {
			b.Fatalf("HISTOR_BENCH_OBSERVERS=%q: want a number of at least 5", s)
		}
		n = v
	}
	return n
}

// benchWitnesses is how many cosignatures a head must gather. Each observer
// has the three before and the three after it on a ring as descriptor peers,
// so it submits to six witnesses: a witness takes add-checkpoint only from
// an observer whose descriptor it holds (its connection gater maps peer IDs
// to did:keys through descriptors), so the allow-list alone does not make a
// submitter of an observer.
const benchWitnesses = 3

// benchObserver is one observer of the benchmark; the federation tests'
// fedNode helpers take a *testing.T, these a testing.TB.
type benchObserver struct {
	i        int
	origin   string
	seed     *keys.Seed
	seedFile string
	p2pPort  int
	node     *Node
	reg      *prometheus.Registry
	labels   int

	crawledAt time.Time // when the last crawl ended
}

func newBenchObserver(tb testing.TB, i int) *benchObserver {
	sum := sha256.Sum256([]byte("federation bench seed " + strconv.Itoa(i)))
	seed, err := keys.NewSeed(sum[:])
	if err != nil {
		tb.Fatal(err)
	}
	seedFile := filepath.Join(tb.TempDir(), "seed")
	if err := os.WriteFile(seedFile, sum[:], 0o600); err != nil {
		tb.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	return &benchObserver{i: i, origin: fmt.Sprintf("o%d.bench.test/log", i), seed: seed, seedFile: seedFile, p2pPort: port}
}

func (bn *benchObserver) logPub() ed25519.PublicKey {
	return bn.seed.LogKey().Public().(ed25519.PublicKey)
}
func (bn *benchObserver) did() string { return awr.DIDKey(bn.logPub()) }
func (bn *benchObserver) witnessName() string {
	return strings.TrimSuffix(bn.origin, "/log") + "/witness"
}
func (bn *benchObserver) p2pAddr() string { return fmt.Sprintf("/ip4/127.0.0.1/tcp/%d", bn.p2pPort) }

func (bn *benchObserver) descriptorFile(tb testing.TB) string {
	cos, err := format.NewCosigner(bn.witnessName(), bn.seed.WitnessKey().Public().(ed25519.PublicKey))
	if err != nil {
		tb.Fatal(err)
	}
	desc, err := format.SignObserver(bn.seed.LogKey(), format.Observer{Origin: bn.origin, Witness: cos,
		P2PKey: bn.seed.P2PKey().Public().(ed25519.PublicKey), Addrs: []string{bn.p2pAddr()}, URL: "https://bench.test", Time: 1})
	if err != nil {
		tb.Fatal(err)
	}
	path := filepath.Join(tb.TempDir(), "descriptor")
	if err := os.WriteFile(path, desc, 0o644); err != nil {
		tb.Fatal(err)
	}
	return path
}

func (bn *benchObserver) start(tb testing.TB, cfg Config) {
	cfg.DataDir, cfg.SeedFile, cfg.LogOrigin = tb.TempDir(), bn.seedFile, bn.origin
	cfg.P2PListen = []string{bn.p2pAddr()}
	cfg.GossipHeartbeat = 100 * time.Millisecond
	bn.reg = prometheus.NewRegistry()
	if os.Getenv("HISTOR_BENCH_LOG") != "" {
		cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	cfg.Registry = bn.reg
	nd, err := New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	if err := nd.Open(context.Background()); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { nd.Close() })
	bn.node = nd
}

func (bn *benchObserver) appendLabel(tb testing.TB) uint64 {
	bn.labels++
	label := fmt.Appendf(nil, `{"by":%d,"n":%d}`, bn.i, bn.labels)
	id := fmt.Sprintf("urn:uuid:00000000-0000-4000-8000-%012x", bn.labels)
	if _, err := bn.node.Log().Append(context.Background(), []hlog.Entry{{ID: id, Label: label}}, nil); err != nil {
		tb.Fatal(err)
	}
	return bn.node.Log().Size()
}

// accepted sums the node's histor_gossip_messages_total{verdict="accept"}.
func (bn *benchObserver) accepted(tb testing.TB) float64 {
	return promtest.Sum(tb, bn.reg, "histor_gossip_messages_total", "verdict", "accept")
}

// startBenchFederation starts n observers on loopback libp2p, every one on
// every allow-list, each a descriptor peer of the three before and after it
// on a ring; it reports the heap and RSS they added.
//
// With every set, each observer holds every other's descriptor instead
// (and so submits to every other witness): the peer view proves an
// observation only by asking its observer, which takes its descriptor.
func startBenchFederation(b *testing.B, n int, base Config, every bool) (nodes []*benchObserver, heapPer, rssPer float64) {
	heap0, rss0 := memNow()
	nodes = make([]*benchObserver, n)
	for i := range nodes {
		nodes[i] = newBenchObserver(b, i)
	}
	descs := make([]string, n)
	var allow []string
	for i, bn := range nodes {
		descs[i] = bn.descriptorFile(b)
		allow = append(allow, bn.did())
	}
	for i, bn := range nodes {
		cfg := base
		cfg.AllowList, cfg.Peers = allow, nil
		for k := 1; k <= benchWitnesses && !every; k++ {
			cfg.Peers = append(cfg.Peers, descs[(i+k)%n], descs[(i-k+n)%n])
		}
		for k := 1; k < n && every; k++ {
			cfg.Peers = append(cfg.Peers, descs[(i+k)%n])
		}
		bn.start(b, cfg)
	}
	heap1, rss1 := memNow()
	return nodes, float64(heap1-heap0) / float64(n) / (1 << 20), float64(rss1-rss0) / float64(n) / (1 << 20)
}

// memNow is the live heap after a collection, and the process's RSS.
func memNow() (heap, rss int64) {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	b, err := os.ReadFile("/proc/self/statm")
	if err == nil {
		if f := strings.Fields(string(b)); len(f) > 1 {
			pages, _ := strconv.ParseInt(f[1], 10, 64)
			rss = pages * int64(os.Getpagesize())
		}
	}
	return int64(ms.HeapAlloc), rss
}

// cpuNow is the process's user and system CPU time so far.
func cpuNow() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func threadCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_THREAD, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// waitFor polls cond every millisecond: the figures are latencies of
// real sockets and hosts, which no fake clock drives.
func waitFor(tb testing.TB, bound time.Duration, what string, cond func() bool) time.Duration {
	start := time.Now()
	for !cond() {
		if time.Since(start) > bound {
			tb.Fatalf("%s: not within %v", what, bound)
		}
		time.Sleep(time.Millisecond)
	}
	return time.Since(start)
}

func percentile(ds []time.Duration, p float64) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, int(float64(len(s))*p))]
}

// BenchmarkFederation runs HISTOR_BENCH_OBSERVERS observers (default 20) in
// this process on loopback libp2p and measures, per head one of them signs,
// the time until every other observer holds it and its log has gathered
// three cosignatures (p50 and p99 over b.N heads), the CPU per accepted
// gossip message beside a bare Ed25519 verify, and, once, the time for
// equivocation evidence to reach every observer; memory per observer is
// reported at start.
func BenchmarkFederation(b *testing.B) {
	n := benchObservers(b)
	nodes, heapPer, rssPer := startBenchFederation(b, n, Config{}, false)
	// Every observer holds a head of every other before the clock starts.
	// The heads signed at open went out before the mesh formed (and are
	// republished a minute later): each signs one more once its ring
	// neighbours hold its first.
	waitFor(b, 60*time.Second, "ring neighbours connected", func() bool {
		for i, bn := range nodes {
			heads := bn.node.fed.Gossip().Heads()
			for k := 1; k <= benchWitnesses; k++ {
				if heads[nodes[(i+k)%n].did()] == nil || heads[nodes[(i-k+n)%n].did()] == nil {
					return false
				}
			}
		}
		return true
	})
	for _, bn := range nodes {
		bn.appendLabel(b)
	}
	waitFor(b, 60*time.Second, "the federation connected", func() bool {
		for _, bn := range nodes {
			heads := bn.node.fed.Gossip().Heads()
			for _, p := range nodes {
				if p != bn && (heads[p.did()] == nil || heads[p.did()].STH.TreeSize == 0) {
					return false
				}
			}
		}
		return true
	})

	var reach, cosign []time.Duration
	var msgs0 float64
	for _, bn := range nodes {
		msgs0 += bn.accepted(b)
	}
	cpu0 := cpuNow()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		src := nodes[i%n]
		start := time.Now()
		size := src.appendLabel(b)
		reach = append(reach, waitFor(b, 30*time.Second, "the head reached every observer", func() bool {
			for _, bn := range nodes {
				if bn == src {
					continue
				}
				if h := bn.node.fed.Gossip().Heads()[src.did()]; h == nil || h.STH.TreeSize < size {
					return false
				}
			}
			return true
		}))
		waitFor(b, 30*time.Second, fmt.Sprintf("three cosignatures of %s", src.origin), func() bool {
			return cosignatures(src, size) >= benchWitnesses
		})
		cosign = append(cosign, time.Since(start))
	}
	b.StopTimer()
	cpu := cpuNow() - cpu0
	var msgs float64
	for _, bn := range nodes {
		msgs += bn.accepted(b)
	}
	b.ReportMetric(float64(percentile(reach, 0.5).Microseconds())/1e3, "reach-p50-ms")
	b.ReportMetric(float64(percentile(reach, 0.99).Microseconds())/1e3, "reach-p99-ms")
	b.ReportMetric(float64(percentile(cosign, 0.5).Microseconds())/1e3, "head+3cosig-p50-ms")
	b.ReportMetric(float64(percentile(cosign, 0.99).Microseconds())/1e3, "head+3cosig-p99-ms")
	if msgs > msgs0 {
		b.ReportMetric(float64(cpu.Microseconds())/(msgs-msgs0), "CPU-µs/accepted-msg")
	}
	b.ReportMetric(float64(bareVerifyCPU().Nanoseconds())/1e3, "CPU-µs/bare-ed25519-verify")
	b.ReportMetric(float64(evidenceReach(b, nodes).Microseconds())/1e3, "evidence-reach-ms")
	b.ReportMetric(heapPer, "heap-MiB/observer")
	b.ReportMetric(rssPer, "RSS-MiB/observer")
}

// cosignatures counts the cosignatures src's /log/checkpoint carries at size.
func cosignatures(src *benchObserver, size uint64) int {
	h := src.node.Log().Latest()
	if h.Size < size {
		return 0
	}
	cp := src.node.fed.CosignedCheckpoint(h)
	return strings.Count(string(cp), "\n— ") - 1
}

// bareVerifyCPU is the CPU one ed25519.Verify of a checkpoint-sized message
// takes on this thread, now (the observers' hosts keep running meanwhile;
// the thread's own clock leaves their work out).
func bareVerifyCPU() time.Duration {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	pub, priv, _ := ed25519.GenerateKey(nil)
	msg := make([]byte, 200)
	sig := ed25519.Sign(priv, msg)
	const rounds = 2000
	start := threadCPU()
	for range rounds {
		if !ed25519.Verify(pub, msg, sig) {
			panic("verify failed")
		}
	}
	return (threadCPU() - start) / rounds
}

// evidenceReach shows observer 1's witness a second tree of observer 0's
// log at the size it cosigned (signed with observer 0's key, as a log that
// forks would) and times until every observer holds the evidence.
func evidenceReach(b *testing.B, nodes []*benchObserver) time.Duration {
	src, wit := nodes[0], nodes[1]
	h := src.node.Log().Latest()
	signer, err := keys.NoteSigner(src.origin, src.seed.LogKey())
	if err != nil {
		b.Fatal(err)
	}
	fork := format.Checkpoint{Origin: src.origin, Size: h.Size, Root: sha256.Sum256([]byte("another tree"))}
	forked, err := format.SignCheckpoint(signer, fork)
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(wit.node.Handler())
	defer srv.Close()
	start := time.Now()
	resp, err := http.Post(srv.URL+"/add-checkpoint", "text/plain",
		strings.NewReader(fmt.Sprintf("old %d\n\n%s", h.Size, forked)))
	if err != nil {
		b.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusConflict && resp.StatusCode != http.StatusUnprocessableEntity {
		b.Fatalf("the witness answered a fork %d", resp.StatusCode)
	}
	waitFor(b, 30*time.Second, "the evidence reached every observer", func() bool {
		for _, bn := range nodes {
			list, err := bn.node.fed.Witness().ListEvidence()
			if err != nil || !slices.ContainsFunc(list, func(e witness.Evidence) bool { return e.Origin == src.origin }) {
				return false
			}
		}
		return true
	})
	return time.Since(start) // from the fork's submission
}

// agreementTarget is the one MCP server (Go SDK, streamable HTTP) every
// observer crawls, listed by one registry fixture, so every observer sees
// the same name and endpoint and so the same server id. A round changes
// its one tool's description; only the observer that crawls next sees it.
type agreementTarget struct {
	endpoint, registry string

	mu   sync.Mutex
	desc string // guarded by mu
}

func newAgreementTarget(tb testing.TB) *agreementTarget {
	t := &agreementTarget{desc: "Forecast, version 0."}
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server {
		s := mcp.NewServer(&mcp.Implementation{Name: "weather", Version: "1.0.0"}, nil)
		mcp.AddTool(s, &mcp.Tool{Name: "forecast", Description: t.description()},
			func(context.Context, *mcp.CallToolRequest, struct {
				City string `json:"city"`
			}) (*mcp.CallToolResult, any, error) {
				panic("a tool was called")
			})
		return s
	}, &mcp.StreamableHTTPOptions{Stateless: true}))
	tb.Cleanup(srv.Close)
	t.endpoint = srv.URL + "/mcp"
	reg := registrytest.Server(tb, []registrytest.Entry{{Name: "io.bench/weather",
		Remotes: []registrytest.Remote{{Type: "streamable-http", URL: t.endpoint}}}})
	t.registry = reg.URL
	return t
}

func (t *agreementTarget) description() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.desc
}

func (t *agreementTarget) set(desc string) {
	t.mu.Lock()
	t.desc = desc
	t.mu.Unlock()
}

// checkClient posts /check for one endpoint to every observer's API.
type checkClient struct {
	urls []string
	body []byte
}

func newCheckClient(tb testing.TB, nodes []*benchObserver, endpoint string) *checkClient {
	c := &checkClient{body: fmt.Appendf(nil, `{"endpoint":%q}`, endpoint)}
	for _, bn := range nodes {
		srv := httptest.NewServer(bn.node.Handler())
		tb.Cleanup(srv.Close)
		c.urls = append(c.urls, srv.URL+"/api/v1/check")
	}
	return c
}

// digests is what observer i's /check lists in observers[]: each did:key's
// digest.
func (c *checkClient) digests(tb testing.TB, i int) map[string]string {
	resp, err := http.Post(c.urls[i], "application/json", bytes.NewReader(c.body))
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		tb.Fatalf("POST /api/v1/check to observer %d: %d %s %v", i, resp.StatusCode, raw, err)
	}
	var ans struct {
		Observers []struct {
			DID    string `json:"did"`
			Digest string `json:"digest"`
		} `json:"observers"`
	}
	if err := json.Unmarshal(raw, &ans); err != nil {
		tb.Fatalf("reading observer %d's /check answer: %v", i, err)
	}
	out := map[string]string{}
	for _, o := range ans.Observers {
		out[o.DID] = o.Digest
	}
	return out
}

// crawl runs one crawl of bn in the foreground: the function the admin
// route's background crawl runs (crawl, catalog reload, own observations
// into the peer view and onto gossip).
func (bn *benchObserver) crawl(tb testing.TB) (start time.Time) {
	// A label's observedAt is in whole seconds, taken during the crawl, and
	// the peer view keeps an observer's later observation only: a crawl in
	// the second the last one ended in would not replace it, so it waits
	// for the next second (before the clock starts).
	if sec := bn.crawledAt.Truncate(time.Second); !time.Now().Truncate(time.Second).After(sec) {
		time.Sleep(time.Until(sec.Add(time.Second)))
	}
	start = time.Now()
	_, err := bn.node.crawls.Run()
	bn.crawledAt = time.Now()
	if err != nil {
		tb.Fatalf("crawl of observer %d: %v", bn.i, err)
	}
	return start
}

// BenchmarkFederationAgreement runs HISTOR_BENCH_OBSERVERS observers
// (default 20), each holding every other's descriptor, that share one
// target: an MCP server on loopback listed by one registry fixture. All of
// them crawl it until every /check lists every observer with one digest.
// Then each iteration changes the target's tool set and has one observer
// (in turn) crawl it, and times from that crawl's start until every
// observer's POST /api/v1/check for the endpoint lists that observer's new
// digest in observers[] (p50 and p99 over b.N changes). The others do not
// crawl again, so only the one observer has seen the change.
func BenchmarkFederationAgreement(b *testing.B) {
	n := benchObservers(b)
	target := newAgreementTarget(b)
	nodes, _, _ := startBenchFederation(b, n, Config{ChecksPerMinute: -1, ScansPerHour: -1,
		Crawl: crawl.Config{Registry: target.registry, AllowPrivateTargets: true}}, true)
	waitFor(b, 60*time.Second, "every observer holds a head of every other", func() bool {
		for _, bn := range nodes {
			heads := bn.node.fed.Gossip().Heads()
			for _, p := range nodes {
				if p != bn && heads[p.did()] == nil {
					return false
				}
			}
		}
		return true
	})
	cc := newCheckClient(b, nodes, target.endpoint)
	firstView(b, nodes, cc)

	var agree, crawled []time.Duration
	b.ResetTimer()
	for r := 0; b.Loop(); r++ {
		src := nodes[r%n]
		old := cc.digests(b, src.i)[src.did()]
		target.set(fmt.Sprintf("Forecast, version %d.", r+1))
		start := src.crawl(b)
		crawled = append(crawled, time.Since(start))
		fresh := cc.digests(b, src.i)[src.did()]
		if fresh == "" || fresh == old {
			b.Fatalf("change %d: observer %d's own /check lists digest %q after the change, %q before", r, src.i, fresh, old)
		}
		// A node that lists the new digest keeps it until src crawls again,
		// so each is asked until it does, then no more.
		pending := make([]bool, n)
		for i := range pending {
			pending[i] = i != src.i
		}
		left := n - 1
		waitFor(b, 30*time.Second, fmt.Sprintf("change %d: observer %d's new digest in every /check", r, src.i), func() bool {
			for i, p := range pending {
				if p && cc.digests(b, i)[src.did()] == fresh {
					pending[i] = false
					left--
				}
			}
			return left == 0
		})
		agree = append(agree, time.Since(start))
	}
	b.StopTimer()
	b.ReportMetric(float64(percentile(agree, 0.5).Microseconds())/1e3, "agreement-p50-ms")
	b.ReportMetric(float64(percentile(agree, 0.99).Microseconds())/1e3, "agreement-p99-ms")
	b.ReportMetric(float64(percentile(crawled, 0.5).Microseconds())/1e3, "crawl-p50-ms")
	b.ReportMetric(float64(percentile(crawled, 0.99).Microseconds())/1e3, "crawl-p99-ms")
}

// firstView has every observer crawl the target and waits until every
// /check lists every observer with the one digest. An observation
// published before a node's GossipSub mesh formed is lost to it until the
// observer's next crawl publishes it again, so the laggards' observers
// crawl again (the tool set unchanged) every few seconds.
func firstView(b *testing.B, nodes []*benchObserver, cc *checkClient) {
	for _, bn := range nodes {
		bn.crawl(b)
	}
	want := cc.digests(b, 0)[nodes[0].did()]
	if want == "" {
		b.Fatal("observer 0's own /check lists no digest after its crawl")
	}
	for try := 0; ; try++ {
		missing := map[*benchObserver]bool{}
		deadline := time.Now().Add(5 * time.Second)
		for time.Now().Before(deadline) {
			clear(missing)
			for i := range nodes {
				got := cc.digests(b, i)
				for _, bn := range nodes {
					if got[bn.did()] != want {
						missing[bn] = true
					}
				}
			}
			if len(missing) == 0 {
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
		if try == 5 {
			b.Fatalf("%d observers' first digest missing from some /check after %d crawls", len(missing), try+1)
		}
		for bn := range missing {
			bn.crawl(b)
		}
	}
}
