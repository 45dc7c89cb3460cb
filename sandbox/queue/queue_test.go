package queue

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/histor-observer/histor/sandbox"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// The test binary doubles as a worker process: TestMain runs workerMain
// when the environment names a mode.
const (
	envMode = "HISTOR_QUEUE_TEST_WORKER"
	envURL  = "HISTOR_QUEUE_TEST_URL"
	envSeed = "HISTOR_QUEUE_TEST_SEED"
)

func TestMain(m *testing.M) {
	if mode := os.Getenv(envMode); mode != "" {
		os.Exit(workerMain(mode))
	}
	os.Exit(m.Run())
}

// workerMain is a worker process. Modes: "ok" observes every job; "hang"
// says "started <job id>" and holds the job until killed; "die" exits in
// the middle of every job.
func workerMain(mode string) int {
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	observe := okObserve
	switch mode {
	case "hang":
		observe = func(ctx context.Context, job Job) (Result, error) {
			fmt.Printf("started %s\n", job.ID)
			<-ctx.Done()
			return Result{}, ctx.Err()
		}
	case "die":
		observe = func(ctx context.Context, job Job) (Result, error) {
			fmt.Printf("started %s\n", job.ID)
			os.Exit(3)
			return Result{}, nil
		}
	}
	w, err := NewWorker(context.Background(), WorkerConfig{
		URL: os.Getenv(envURL), SeedFile: os.Getenv(envSeed), Concurrency: 1,
		NakDelay: 100 * time.Millisecond, Beat: testBeat, Observe: observe, Logger: log,
	})
	if err != nil {
		log.Error("starting worker", "err", err)
		return 2
	}
	fmt.Println("ready")
	w.Run(context.Background())
	return 0
}

// okObserve observes a package that answered, with one evidence record.
func okObserve(_ context.Context, job Job) (Result, error) {
	obs := observation(job.Target, sandbox.StatusOK)
	ev := []byte("trap record for " + job.Target)
	return Result{Observation: obs, Evidence: map[string][]byte{SRI(ev): ev}}, nil
}

func observation(target string, status sandbox.Status) json.RawMessage {
	reg, name, version := splitTarget(target)
	b, err := json.Marshal(sandbox.Observation{Type: sandbox.Type, Observer: "test", Registry: reg,
		Name: name, Version: version, Package: target, Status: status, Stages: []sandbox.Stage{}})
	if err != nil {
		panic(err)
	}
	return b
}

// node is a queue under test with one or more worker keys.
type node struct {
	q     *Queue
	cfg   Config
	seeds []string    // seed files, one per worker key
	got   chan Result // what the handler accepted, in order
	reg   *prometheus.Registry
	stop  func()
	// failPoisoned is how many poisoned results the handler fails on
	// before it takes one.
	failPoisoned atomic.Int32
}

func testLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// testBeat is the test workers' beat: well inside the 2 s AckWait, so a
// stall of the loaded machine does not pass for a dead worker.
const testBeat = 150 * time.Millisecond

// baseConfig is a node config for n worker keys, listening on a free
// loopback port, with a short AckWait so redelivery takes seconds.
func baseConfig(t testing.TB, n int) (Config, []string) {
	dir := t.TempDir()
	cfg := Config{DataDir: dir, Listen: "127.0.0.1:0", AckWait: 2 * time.Second,
		SweepEvery: time.Second, Observer: "test", Logger: testLogger(t)}
	var seeds []string
	for i := range n {
		seed := filepath.Join(dir, fmt.Sprintf("worker%d.seed", i))
		pub, err := CreateSeedFile(seed)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Workers = append(cfg.Workers, pub)
		seeds = append(seeds, seed)
	}
	return cfg, seeds
}

// startNode opens cfg's queue and runs it with a handler that records.
func startNode(t testing.TB, cfg Config, seeds []string) *node {
	t.Helper()
	n := openNode(t, cfg, seeds)
	n.run(t)
	return n
}

// openNode opens cfg's queue without running it: jobs flow, but no result
// or advisory is read.
func openNode(t testing.TB, cfg Config, seeds []string) *node {
	t.Helper()
	n := &node{cfg: cfg, seeds: seeds, got: make(chan Result, 100), reg: prometheus.NewRegistry()}
	cfg.Registry = n.reg
	q, err := Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	n.q = q
	n.stop = onlyOnce(func() { q.Close() })
	t.Cleanup(func() { n.stop() })
	return n
}

func (n *node) run(t testing.TB) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := n.q.Run(ctx, n.handle); err != nil {
			t.Error(err)
		}
	}()
	n.stop = onlyOnce(func() { cancel(); <-done; n.q.Close() })
}

func (n *node) handle(_ context.Context, r Result) error {
	if r.Poisoned() && n.failPoisoned.Add(-1) >= 0 {
		return errors.New("store unavailable")
	}
	n.got <- r
	return nil
}

// onlyOnce makes f safe to call twice.
func onlyOnce(f func()) func() {
	var once atomic.Bool
	return func() {
		if once.CompareAndSwap(false, true) {
			f()
		}
	}
}

func (n *node) enqueue(t testing.TB, target string) Job {
	t.Helper()
	job, err := NewJob(target, sandbox.DefaultLimits(), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := n.q.Enqueue(context.Background(), job); err != nil {
		t.Fatal(err)
	}
	return job
}

func (n *node) worker(t testing.TB, seed string, observe Observe, tlsc *tls.Config) {
	t.Helper()
	w, err := NewWorker(context.Background(), WorkerConfig{URL: n.q.ClientURL(), SeedFile: seed,
		TLS: tlsc, Concurrency: 2, NakDelay: 50 * time.Millisecond, Beat: testBeat, Observe: observe, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); w.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done; w.Close() })
}

// next waits for the handler's next result.
func (n *node) next(t testing.TB) Result {
	t.Helper()
	select {
	case r := <-n.got:
		return r
	case <-time.After(30 * time.Second):
		t.Fatal("no result reached the handler in 30s")
		return Result{}
	}
}

// idle waits until the jobs stream is empty and the results consumer has
// nothing left, then says the handler got nothing more.
func (n *node) idle(t testing.TB) {
	t.Helper()
	ctx := context.Background()
	eventually(t, "queue idle", func() bool {
		si, err := n.q.jobs.Info(ctx)
		if err != nil || si.State.Msgs != 0 {
			return false
		}
		ci, err := n.q.results.Info(ctx)
		return err == nil && ci.NumPending == 0 && ci.NumAckPending == 0
	})
	select {
	case r := <-n.got:
		t.Fatalf("handler got another result: %+v", r)
	default:
	}
}

// eventually polls cond: the server's state has no event to wait on.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after 30s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func checkAccepted(t *testing.T, r Result, job Job) {
	t.Helper()
	if r.JobID != job.ID || r.Target != job.Target || r.Poisoned() {
		t.Fatalf("result %s %s poisoned=%v, want job %s %s", r.JobID, r.Target, r.Poisoned(), job.ID, job.Target)
	}
	if string(r.Binding) != string(Bind(job.Token, r)) {
		t.Fatal("accepted result's binding does not verify under the job token")
	}
	if err := checkObservation(r.Observation, job.Target); err != nil {
		t.Fatal(err)
	}
}

func TestEndToEnd(t *testing.T) {
	cfg, seeds := baseConfig(t, 1)
	n := startNode(t, cfg, seeds)
	n.worker(t, seeds[0], okObserve, nil)
	job := n.enqueue(t, "npm:@scope/pkg@1.2.3")
	r := n.next(t)
	checkAccepted(t, r, job)
	if r.Worker != cfg.Workers[0] || r.Deliveries != 1 || len(r.Evidence) != 1 {
		t.Fatalf("worker %q deliveries %d evidence %d", r.Worker, r.Deliveries, len(r.Evidence))
	}
	n.idle(t)
	if _, err := n.q.pendingJob(context.Background(), job.ID); err == nil {
		t.Fatal("job still pending after its result was handled")
	}
	if got := testutil.ToFloat64(n.q.m.done); got != 1 {
		t.Fatalf("done = %v, want 1", got)
	}
}

// TestLongJobBeats: a job running three ack deadlines long stays with its
// worker because the worker beats, and is delivered once.
func TestLongJobBeats(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a job for three ack deadlines")
	}
	cfg, seeds := baseConfig(t, 1)
	n := startNode(t, cfg, seeds)
	var calls atomic.Int32
	n.worker(t, seeds[0], func(ctx context.Context, job Job) (Result, error) {
		calls.Add(1)
		select { // the job's own run time, which the beats must cover
		case <-time.After(3 * cfg.AckWait):
		case <-ctx.Done():
			return Result{}, ctx.Err()
		}
		return okObserve(ctx, job)
	}, nil)
	job := n.enqueue(t, "npm:long@1.0.0")
	r := n.next(t)
	checkAccepted(t, r, job)
	if r.Deliveries != 1 || calls.Load() != 1 {
		t.Fatalf("delivery %d, %d runs; want 1 and 1", r.Deliveries, calls.Load())
	}
	n.idle(t)
}

func TestDuplicate(t *testing.T) {
	cfg, seeds := baseConfig(t, 1)
	n := startNode(t, cfg, seeds)
	n.enqueue(t, "npm:left-pad@1.3.0")
	again, _ := NewJob("npm:left-pad@1.3.0", sandbox.DefaultLimits(), time.Now())
	if err := n.q.Enqueue(context.Background(), again); !errors.Is(err, ErrDuplicate) {
		t.Fatalf("second enqueue: %v, want ErrDuplicate", err)
	}
	if _, err := n.q.pendingJob(context.Background(), again.ID); err == nil {
		t.Fatal("the duplicate was left pending")
	}
	if d := n.q.depth(); d != 1 {
		t.Fatalf("depth %v, want 1", d)
	}
	if got := testutil.ToFloat64(n.q.m.enqueued); got != 1 {
		t.Fatalf("enqueued = %v, want 1", got)
	}
}

// TestForgedResults sends results a worker could forge, then one honest
// one; the handler must see only the honest one and every forgery counted.
func TestForgedResults(t *testing.T) {
	cfg, seeds := baseConfig(t, 2)
	n := startNode(t, cfg, seeds)
	job := n.enqueue(t, "npm:victim@1.0.0")
	self, other := cfg.Workers[0], cfg.Workers[1]
	js := workerJS(t, n.q.ClientURL(), seeds[0], self)
	unknown, _ := NewJob("npm:victim@1.0.0", sandbox.DefaultLimits(), time.Now())
	ev := []byte("x")
	honest := func() Result {
		return Result{JobID: job.ID, Target: job.Target, Worker: self,
			Observation: observation(job.Target, sandbox.StatusOK)}
	}
	bound := func(token string, r Result) Result { r.Binding = Bind(token, r); return r }
	cases := []struct {
		reason string
		r      Result
	}{
		{rejectUnknownJob, bound(unknown.Token, Result{JobID: unknown.ID, Target: unknown.Target, Worker: self,
			Observation: observation(unknown.Target, sandbox.StatusOK)})},
		{rejectBinding, bound(unknown.Token, honest())},
		{rejectTarget, func() Result { r := honest(); r.Target = "npm:other@1.0.0"; return bound(job.Token, r) }()},
		{rejectObservation, func() Result {
			r := honest()
			r.Observation = observation("npm:other@1.0.0", sandbox.StatusOK)
			return bound(job.Token, r)
		}()},
		{rejectObservation, func() Result {
			r := honest()
			r.Observation = observation(job.Target, sandbox.StatusPoisoned)
			return bound(job.Token, r)
		}()},
		{rejectWorker, func() Result { r := honest(); r.Worker = other; return bound(job.Token, r) }()},
		{rejectEvidence, func() Result {
			r := honest()
			r.Evidence = map[string][]byte{SRI([]byte("y")): ev}
			return bound(job.Token, r)
		}()},
		{rejectBinding, func() Result {
			r := bound(job.Token, honest())
			r.Observation = observation(job.Target, sandbox.StatusExited) // changed after binding
			return r
		}()},
	}
	ctx := context.Background()
	want := map[string]float64{}
	for _, c := range cases {
		data, _ := json.Marshal(c.r)
		if _, err := js.Publish(ctx, resultsPrefix+self, data); err != nil {
			t.Fatal(err)
		}
		want[c.reason]++
	}
	if _, err := js.Publish(ctx, resultsPrefix+self, []byte("not json")); err != nil {
		t.Fatal(err)
	}
	want[rejectMalformed]++
	// The server itself refuses a result under another worker's key.
	data, _ := json.Marshal(bound(job.Token, honest()))
	if _, err := js.Publish(ctx, resultsPrefix+other, data); err == nil {
		t.Fatal("published under another worker's subject")
	}
	if _, err := js.Publish(ctx, resultsPrefix+self, data); err != nil {
		t.Fatal(err)
	}
	checkAccepted(t, n.next(t), job)
	for reason, w := range want {
		if got := testutil.ToFloat64(n.q.m.rejected.WithLabelValues(reason)); got != w {
			t.Errorf("rejected{reason=%q} = %v, want %v", reason, got, w)
		}
	}
	select {
	case r := <-n.got:
		t.Fatalf("a forged result reached the handler: %+v", r)
	default:
	}
}

// workerJS is a bare connection with a worker's key and permissions.
func workerJS(t testing.TB, url, seed, pub string) jetstream.JetStream {
	t.Helper()
	kp, err := LoadSeedFile(seed)
	if err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect(url, nats.Nkey(pub, kp.Sign), nats.CustomInboxPrefix(inboxPrefix(pub)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc, jetstream.WithDefaultTimeout(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	return js
}

func TestPoisonedObserveFails(t *testing.T) {
	cfg, seeds := baseConfig(t, 1)
	n := startNode(t, cfg, seeds)
	var calls atomic.Int32
	n.worker(t, seeds[0], func(context.Context, Job) (Result, error) {
		calls.Add(1)
		return Result{}, errors.New("sandbox unavailable")
	}, nil)
	job := n.enqueue(t, "pypi:broken==0.1")
	checkPoisoned(t, n, job)
	if c := calls.Load(); c != int32(DefaultMaxDeliver) {
		t.Fatalf("Observe ran %d times, want %d", c, DefaultMaxDeliver)
	}
}

// TestPoisonedSweep: the handler fails on the advisory's poisoned result,
// so only the sweep can record it.
func TestPoisonedSweep(t *testing.T) {
	cfg, seeds := baseConfig(t, 1)
	n := startNode(t, cfg, seeds)
	n.failPoisoned.Store(1)
	n.worker(t, seeds[0], func(context.Context, Job) (Result, error) {
		return Result{}, errors.New("sandbox unavailable")
	}, nil)
	job := n.enqueue(t, "npm:sweep-me@1.0.0")
	checkPoisoned(t, n, job)
	if n.failPoisoned.Load() >= 0 {
		t.Fatal("the handler never failed: the sweep went untested")
	}
}

// TestPoisonedWhileAway: the job runs out of deliveries before the node
// reads anything, so the advisory is lost and the first sweep records it.
func TestPoisonedWhileAway(t *testing.T) {
	cfg, seeds := baseConfig(t, 1)
	n := openNode(t, cfg, seeds)
	var calls atomic.Int32
	n.worker(t, seeds[0], func(context.Context, Job) (Result, error) {
		calls.Add(1)
		return Result{}, errors.New("sandbox unavailable")
	}, nil)
	job := n.enqueue(t, "npm:unread@1.0.0")
	eventually(t, "deliveries exhausted", func() bool {
		ci, err := n.q.workers.Info(context.Background())
		return err == nil && calls.Load() == int32(DefaultMaxDeliver) && ci.NumAckPending == 0
	})
	n.run(t)
	checkPoisoned(t, n, job)
}

func checkPoisoned(t *testing.T, n *node, job Job) {
	t.Helper()
	r := n.next(t)
	if !r.Poisoned() || r.JobID != job.ID || r.Deliveries != DefaultMaxDeliver {
		t.Fatalf("got %+v, want a poisoned result for %s after %d deliveries", r, job.ID, DefaultMaxDeliver)
	}
	var o sandbox.Observation
	if err := json.Unmarshal(r.Observation, &o); err != nil || o.Status != sandbox.StatusPoisoned || o.Package != job.Target {
		t.Fatalf("poisoned observation %s (%v)", r.Observation, err)
	}
	n.idle(t)
	if got := testutil.ToFloat64(n.q.m.poisoned); got != 1 {
		t.Fatalf("poisoned = %v, want 1", got)
	}
	if _, err := n.q.pendingJob(context.Background(), job.ID); err == nil {
		t.Fatal("poisoned job still pending")
	}
}

// process is a worker process: the test binary re-executed.
type process struct {
	cmd   *exec.Cmd
	lines *bufio.Scanner
}

func startProcess(t *testing.T, mode, url, seed string) *process {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envMode+"="+mode, envURL+"="+url, envSeed+"="+seed)
	cmd.Stderr = t.Output()
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &process{cmd: cmd, lines: bufio.NewScanner(out)}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	p.expect(t, "ready")
	return p
}

// expect reads the process's next line and wants it to start with prefix.
func (p *process) expect(t *testing.T, prefix string) string {
	t.Helper()
	if !p.lines.Scan() {
		t.Fatalf("worker process ended before %q: %v", prefix, p.lines.Err())
	}
	if l := p.lines.Text(); strings.HasPrefix(l, prefix) {
		return strings.TrimSpace(strings.TrimPrefix(l, prefix))
	}
	t.Fatalf("worker process said %q, want %q", p.lines.Text(), prefix)
	return ""
}

func TestWorkerKilledMidJob(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out an ack deadline")
	}
	cfg, seeds := baseConfig(t, 2)
	n := startNode(t, cfg, seeds)
	url := n.q.ClientURL()
	job := n.enqueue(t, "npm:slow@2.0.0")
	a := startProcess(t, "hang", url, seeds[0])
	if id := a.expect(t, "started"); id != job.ID {
		t.Fatalf("worker a started %s, want %s", id, job.ID)
	}
	startProcess(t, "ok", url, seeds[1])
	if err := a.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	a.cmd.Wait()
	r := n.next(t)
	checkAccepted(t, r, job)
	if r.Worker != cfg.Workers[1] || r.Deliveries != 2 {
		t.Fatalf("result from %s on delivery %d, want %s on delivery 2", r.Worker, r.Deliveries, cfg.Workers[1])
	}
	n.idle(t)
	if got := testutil.CollectAndCount(n.q.m.rejected); got != 0 {
		t.Fatalf("%d rejected results, want none", got)
	}
}

// TestPoisonedWorkerDies: every delivery kills its worker process.
func TestPoisonedWorkerDies(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out three ack deadlines")
	}
	cfg, seeds := baseConfig(t, 1)
	n := startNode(t, cfg, seeds)
	job := n.enqueue(t, "npm:crasher@0.0.1")
	for i := range DefaultMaxDeliver {
		p := startProcess(t, "die", n.q.ClientURL(), seeds[0])
		if id := p.expect(t, "started"); id != job.ID {
			t.Fatalf("delivery %d: worker started %s, want %s", i+1, id, job.ID)
		}
		p.cmd.Wait()
	}
	// The server notices the last delivery ran out only when a worker
	// asks for more work, as a running pool always does.
	startProcess(t, "ok", n.q.ClientURL(), seeds[0])
	checkPoisoned(t, n, job)
}

func TestWorkerRefused(t *testing.T) {
	cfg, seeds := baseConfig(t, 1)
	n := startNode(t, cfg, seeds)
	stranger := filepath.Join(t.TempDir(), "stranger.seed")
	if _, err := CreateSeedFile(stranger); err != nil {
		t.Fatal(err)
	}
	loose := filepath.Join(t.TempDir(), "loose.seed")
	b, _ := os.ReadFile(seeds[0])
	os.WriteFile(loose, b, 0o644)
	for _, seed := range []string{stranger, loose, filepath.Join(t.TempDir(), "missing.seed")} {
		_, err := NewWorker(context.Background(), WorkerConfig{URL: n.q.ClientURL(), SeedFile: seed,
			Observe: okObserve, Logger: testLogger(t)})
		if err == nil {
			t.Errorf("worker with %s was let in", filepath.Base(seed))
		}
	}
	if _, err := nats.Connect(n.q.ClientURL()); !errors.Is(err, nats.ErrAuthorization) {
		t.Errorf("connecting without a key: %v, want an authorization error", err)
	}
}

func TestTLS(t *testing.T) {
	ca := newTestCA(t)
	pool := x509.NewCertPool()
	pool.AddCert(ca.cert)
	clientCert := ca.issue(t, "worker", nil)
	for _, mtls := range []bool{false, true} {
		t.Run(fmt.Sprintf("mtls=%v", mtls), func(t *testing.T) {
			cfg, seeds := baseConfig(t, 1)
			cfg.TLS = &tls.Config{Certificates: []tls.Certificate{ca.issue(t, "node", net.IPv4(127, 0, 0, 1))},
				MinVersion: tls.VersionTLS12}
			if mtls {
				cfg.TLS.ClientCAs, cfg.TLSVerify = pool, true
			}
			n := startNode(t, cfg, seeds)
			url := n.q.ClientURL()
			plain := strings.Replace(url, "tls://", "nats://", 1)
			if refusedPlaintext(t, plain) != nil {
				t.Fatal("the server answered a plaintext client")
			}
			if _, err := NewWorker(context.Background(), WorkerConfig{URL: plain, SeedFile: seeds[0],
				Observe: okObserve, Logger: testLogger(t)}); err == nil {
				t.Fatal("a plaintext worker got in")
			}
			if mtls {
				w, err := NewWorker(context.Background(), WorkerConfig{URL: url, SeedFile: seeds[0],
					TLS: &tls.Config{RootCAs: pool}, Observe: okObserve, Logger: testLogger(t)})
				if err == nil {
					t.Fatalf("a worker without a client certificate got in: %v", w.nc.ConnectedUrl())
				}
				t.Log(err)
			}
			tc := &tls.Config{RootCAs: pool}
			if mtls {
				tc.Certificates = []tls.Certificate{clientCert}
			}
			n.worker(t, seeds[0], okObserve, tc)
			job := n.enqueue(t, "npm:tls-pkg@1.0.0")
			checkAccepted(t, n.next(t), job)
		})
	}
}

// refusedPlaintext speaks the NATS protocol in plaintext to url and
// returns what the server said after CONNECT, nil if it said nothing
// useful (closed or refused).
func refusedPlaintext(t *testing.T, url string) []byte {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(url, "nats://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	r := bufio.NewReader(c)
	info, err := r.ReadString('\n')
	if err != nil || !strings.Contains(info, `"tls_required":true`) {
		t.Fatalf("server INFO %q (%v), want tls_required", info, err)
	}
	io.WriteString(c, "CONNECT {\"verbose\":false}\r\nPING\r\n")
	line, _ := r.ReadString('\n')
	if strings.HasPrefix(line, "PONG") {
		return []byte(line)
	}
	return nil
}

type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

func newTestCA(t *testing.T) testCA {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return testCA{cert: cert, key: key}
}

// issue makes a leaf for ip (a server) or, with no ip, a client.
func (ca testCA) issue(t *testing.T, name string, ip net.IP) tls.Certificate {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	if ip != nil {
		tmpl.IPAddresses = []net.IP{ip}
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// TestRestart stops the node with jobs queued and starts it again on the
// same store: the jobs, their binding state and the duplicate window stay.
func TestRestart(t *testing.T) {
	cfg, seeds := baseConfig(t, 1)
	first := startNode(t, cfg, seeds)
	jobs := []Job{first.enqueue(t, "npm:a@1.0.0"), first.enqueue(t, "pypi:b==2.0")}
	first.stop()

	n := startNode(t, cfg, seeds)
	if d := n.q.depth(); d != 2 {
		t.Fatalf("depth after restart %v, want 2", d)
	}
	again, _ := NewJob("npm:a@1.0.0", sandbox.DefaultLimits(), time.Now())
	if err := n.q.Enqueue(context.Background(), again); !errors.Is(err, ErrDuplicate) {
		t.Fatalf("enqueue after restart: %v, want ErrDuplicate", err)
	}
	n.worker(t, seeds[0], okObserve, nil)
	byID := map[string]Job{jobs[0].ID: jobs[0], jobs[1].ID: jobs[1]}
	for range jobs {
		r := n.next(t)
		job, ok := byID[r.JobID]
		if !ok {
			t.Fatalf("result for unexpected job %s", r.JobID)
		}
		checkAccepted(t, r, job)
		delete(byID, r.JobID)
	}
	n.idle(t)
}

func TestSplitTarget(t *testing.T) {
	for _, c := range []struct{ in, reg, name, version string }{
		{"npm:left-pad@1.3.0", "npm", "left-pad", "1.3.0"},
		{"npm:@scope/pkg@1.2.3", "npm", "@scope/pkg", "1.2.3"},
		{"pypi:mcp-server==0.1", "pypi", "mcp-server", "0.1"},
		{"npm:@scope/pkg", "npm", "@scope/pkg", ""},
	} {
		reg, name, version := splitTarget(c.in)
		if reg != c.reg || name != c.name || version != c.version {
			t.Errorf("splitTarget(%q) = %q %q %q", c.in, reg, name, version)
		}
	}
}

// TestWorkerPermissions: a worker's key reaches nothing but its own work.
func TestWorkerPermissions(t *testing.T) {
	cfg, seeds := baseConfig(t, 1)
	n := startNode(t, cfg, seeds)
	js := workerJS(t, n.q.ClientURL(), seeds[0], cfg.Workers[0])
	ctx := context.Background()
	if _, err := js.Publish(ctx, jobsSubject, []byte("{}")); err == nil {
		t.Error("a worker queued a job")
	}
	if _, err := js.KeyValue(ctx, pendingBucket); err == nil {
		t.Error("a worker opened the pending-job bucket")
	}
	if _, err := js.Stream(ctx, JobsStream); err == nil {
		t.Error("a worker read the jobs stream's info")
	}
}

// BenchmarkQueue measures one job at a time through the queue (Enqueue →
// worker over loopback with a no-op Observe → result checked and handled)
// beside a bare JetStream publish + fetch + ack of a job-sized payload on
// the same kind of embedded server.
func BenchmarkQueue(b *testing.B) {
	b.Run("queue", func(b *testing.B) {
		cfg, seeds := baseConfig(b, 1)
		cfg.Logger = slog.New(slog.DiscardHandler)
		n := startNode(b, cfg, seeds)
		n.worker(b, seeds[0], okObserve, nil)
		ctx := context.Background()
		for i := 0; b.Loop(); i++ {
			job, _ := NewJob(fmt.Sprintf("npm:bench@1.0.%d", i), sandbox.DefaultLimits(), time.Now())
			if err := n.q.Enqueue(ctx, job); err != nil {
				b.Fatal(err)
			}
			if r := n.next(b); r.JobID != job.ID {
				b.Fatalf("result for %s, want %s", r.JobID, job.ID)
			}
		}
	})
	b.Run("bare", func(b *testing.B) {
		job, _ := NewJob("npm:bench@1.0.0", sandbox.DefaultLimits(), time.Now())
		payload, _ := json.Marshal(job)
		pub, cons := bareJetStream(b)
		ctx := context.Background()
		for b.Loop() {
			if _, err := pub.Publish(ctx, "bare", payload); err != nil {
				b.Fatal(err)
			}
			batch, err := cons.Fetch(1, jetstream.FetchMaxWait(5*time.Second))
			if err != nil {
				b.Fatal(err)
			}
			for m := range batch.Messages() {
				if err := m.DoubleAck(ctx); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}

// bareJetStream is an embedded server like the queue's, a publisher
// in-process (as the node) and a pull consumer over loopback (as a worker).
func bareJetStream(b *testing.B) (jetstream.JetStream, jetstream.Consumer) {
	s, err := startServer(&server.Options{JetStream: true, StoreDir: b.TempDir(), NoSigs: true,
		Host: "127.0.0.1", Port: server.RANDOM_PORT}, slog.New(slog.DiscardHandler))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Shutdown(); s.WaitForShutdown() })
	connect := func(opts ...nats.Option) jetstream.JetStream {
		nc, err := nats.Connect(s.ClientURL(), opts...)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(nc.Close)
		js, _ := jetstream.New(nc)
		return js
	}
	pub := connect(nats.InProcessServer(s))
	ctx := context.Background()
	if _, err := pub.CreateStream(ctx, jetstream.StreamConfig{Name: "BARE", Subjects: []string{"bare"},
		Retention: jetstream.WorkQueuePolicy, Storage: jetstream.FileStorage}); err != nil {
		b.Fatal(err)
	}
	if _, err := pub.CreateOrUpdateConsumer(ctx, "BARE", jetstream.ConsumerConfig{Durable: "w",
		AckPolicy: jetstream.AckExplicitPolicy}); err != nil {
		b.Fatal(err)
	}
	cons, err := connect().Consumer(ctx, "BARE", "w")
	if err != nil {
		b.Fatal(err)
	}
	return pub, cons
}
