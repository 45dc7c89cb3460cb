package node

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"fmt"
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
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

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
	mfs, err := bn.reg.Gather()
	if err != nil {
		tb.Fatal(err)
	}
	var sum float64
	for _, mf := range mfs {
		if mf.GetName() != "histor_gossip_messages_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "verdict" && l.GetValue() == "accept" {
					sum += m.GetCounter().GetValue()
				}
			}
		}
	}
	return sum
}

// startBenchFederation starts n observers on loopback libp2p, every one on
// every allow-list, each a descriptor peer of the three before and after it
// on a ring; it reports the heap and RSS they added.
func startBenchFederation(b *testing.B, n int) (nodes []*benchObserver, heapPer, rssPer float64) {
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
		var cfg Config
		cfg.AllowList = allow
		for k := 1; k <= benchWitnesses; k++ {
			cfg.Peers = append(cfg.Peers, descs[(i+k)%n], descs[(i-k+n)%n])
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
	nodes, heapPer, rssPer := startBenchFederation(b, n)
	// Every observer holds a head of every other before the clock starts.
	// The heads signed at open went out before the mesh formed (and are
	// republished a minute later): each signs one more once its ring
	// neighbours hold its first.
	waitFor(b, 60*time.Second, "ring neighbours connected", func() bool {
		for i, bn := range nodes {
			heads := bn.node.fed.gossipNode().Heads()
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
			heads := bn.node.fed.gossipNode().Heads()
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
				if h := bn.node.fed.gossipNode().Heads()[src.did()]; h == nil || h.STH.TreeSize < size {
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
	cp := src.node.fed.cosignedCheckpoint(h)
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
			list, err := bn.node.fed.wit.ListEvidence()
			if err != nil || !slices.ContainsFunc(list, func(e witness.Evidence) bool { return e.Origin == src.origin }) {
				return false
			}
		}
		return true
	})
	return time.Since(start) // from the fork's submission
}
