package guard

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"sync"
	"testing"
	"time"
)

func okHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
}

// A rebinding resolver answers a public address first and loopback afterwards. The guard
// must look the name up once and dial the public answer; the loopback server, which a second
// lookup would have reached, must see nothing.
func TestRebindingDialsTheCheckedAddress(t *testing.T) {
	cert, pool := testCert(t, "rebind.test")
	victim := newCountingServer(t, okHandler(), &cert)
	public := newCountingServer(t, okHandler(), &cert)
	r := &fakeResolver{seq: map[string][][]string{"rebind.test": {{"93.184.216.34"}, {"127.0.0.1"}}}}
	g := newGuard(t, Config{Resolver: r, RootCAs: pool})
	checked := "93.184.216.34:" + victim.port()
	dialled := standIn(g, checked, public.Listener.Addr())

	target, err := g.Check(context.Background(), "https://rebind.test:"+victim.port()+"/mcp")
	if err != nil {
		t.Fatalf("Check: %v", err)
	}
	if target.Addr.String() != checked {
		t.Fatalf("checked %s, want %s", target.Addr, checked)
	}
	for range 3 {
		resp, err := g.Client().Get(target.URL.String())
		if err != nil {
			t.Fatalf("GET: %v", err)
		}
		drain(resp)
	}
	// A fresh client pool forces new dials; they must still go to the pinned address.
	g.Client().CloseIdleConnections()
	resp, err := g.Client().Get(target.URL.String())
	if err != nil {
		t.Fatalf("GET after closing idle connections: %v", err)
	}
	drain(resp)

	if n := r.count("rebind.test"); n != 1 {
		t.Errorf("%d lookups of rebind.test, want 1", n)
	}
	for _, a := range *dialled {
		if a != checked {
			t.Errorf("dialled %s, want only %s", a, checked)
		}
	}
	if len(*dialled) != 2 {
		t.Errorf("dialled %d times, want 2", len(*dialled))
	}
	if n := victim.requests.Load() + victim.accepted.Load(); n != 0 {
		t.Errorf("the loopback server saw %d requests/connections", n)
	}
	if n := public.requests.Load(); n != 4 {
		t.Errorf("the checked server saw %d requests, want 4", n)
	}
}

// A host whose answer turned private since the last Check loses its pin: the client refuses it
// rather than dialling the address approved earlier.
func TestRefusedCheckWithdrawsThePin(t *testing.T) {
	r := &fakeResolver{seq: map[string][][]string{"turns.test": {{"93.184.216.34"}, {"10.0.0.7"}}}}
	g := newGuard(t, Config{Resolver: r})
	dialled := standIn(g, "93.184.216.34:443", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 9})
	if _, err := g.Check(context.Background(), "https://turns.test/mcp"); err != nil {
		t.Fatalf("first Check: %v", err)
	}
	if _, err := g.Check(context.Background(), "https://turns.test/mcp"); !isBlocked(err) {
		t.Fatalf("second Check = %v, want a BlockedError", err)
	}
	if _, err := g.Client().Get("https://turns.test/mcp"); !isBlocked(err) {
		t.Errorf("GET after a refused Check = %v, want a BlockedError", err)
	}
	if len(*dialled) != 0 {
		t.Errorf("dialled %q", *dialled)
	}
}

// Without a prior Check the client checks the request URL itself, once, with the same rules.
func TestClientChecksUncheckedURL(t *testing.T) {
	victim := newCountingServer(t, okHandler(), nil)
	r := &fakeResolver{table: map[string][]string{"private.test": {"127.0.0.1"}}}
	g := newGuard(t, Config{Resolver: r})
	for _, raw := range []string{
		"https://private.test:" + victim.port() + "/",
		"https://127.0.0.1:" + victim.port() + "/",
		"http://127.0.0.1:" + victim.port() + "/",
		"https://u:p@127.0.0.1:" + victim.port() + "/",
	} {
		_, err := g.Client().Get(raw)
		if st, ok := Status(err); !ok || st != "blocked-address" {
			t.Errorf("GET %s: %v (status %q), want blocked-address", raw, err, st)
		}
	}
	req, _ := http.NewRequest("GET", "https://public.test/x", nil)
	req.URL.Path = "/{id}"
	if _, err := g.Client().Do(req); !errors.Is(err, ErrTemplatedURL) {
		t.Errorf("templated path: %v", err)
	}
	if n := victim.requests.Load() + victim.accepted.Load(); n != 0 {
		t.Errorf("the loopback server saw %d requests/connections", n)
	}
}

func TestRedirectIsNotFollowed(t *testing.T) {
	cert, pool := testCert(t, "redirect.test", "local.test")
	victim := newCountingServer(t, okHandler(), &cert)
	location := "https://127.0.0.1:" + victim.port() + "/metadata"
	public := newCountingServer(t, http.RedirectHandler(location, http.StatusFound), &cert)
	r := &fakeResolver{table: map[string][]string{"redirect.test": {"93.184.216.34"}, "local.test": {"127.0.0.1"}}}
	g := newGuard(t, Config{Resolver: r, RootCAs: pool})
	standIn(g, "93.184.216.34:443", public.Listener.Addr())

	resp, err := g.Client().Get("https://redirect.test/mcp")
	if err != nil {
		t.Fatalf("GET: %v", err)
	}
	drain(resp)
	if resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != location {
		t.Errorf("got %d to %q, want the 302 itself", resp.StatusCode, resp.Header.Get("Location"))
	}
	if _, err := g.Check(context.Background(), location); !isBlocked(err) {
		t.Errorf("Check(Location) = %v, want a BlockedError", err)
	}
	if n := victim.requests.Load() + victim.accepted.Load(); n != 0 {
		t.Errorf("the redirect target saw %d requests/connections", n)
	}

	// Also with AllowPrivate, where the target would be permitted: still not followed.
	gp := newGuard(t, Config{AllowPrivate: true, Resolver: r, RootCAs: pool})
	resp, err = gp.Client().Get("https://local.test:" + public.port() + "/")
	if err != nil {
		t.Fatalf("GET (AllowPrivate): %v", err)
	}
	drain(resp)
	if resp.StatusCode != http.StatusFound || victim.requests.Load() != 0 {
		t.Errorf("AllowPrivate: got %d, victim saw %d", resp.StatusCode, victim.requests.Load())
	}
}

func isBlocked(err error) bool {
	var be *BlockedError
	return errors.As(err, &be)
}

// The server must see the name, not the address, as Host and as TLS SNI, and the certificate
// must be checked against the name.
func TestHostAndSNIAreTheName(t *testing.T) {
	cert, pool := testCert(t, "mcp.example.test")
	var mu sync.Mutex
	var host, sni, ua, enc string
	srv := newCountingServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		host, sni, ua, enc = r.Host, r.TLS.ServerName, r.UserAgent(), r.Header.Get("Accept-Encoding")
		mu.Unlock()
	}), &cert)
	r := &fakeResolver{table: map[string][]string{
		"mcp.example.test":   {"127.0.0.1"},
		"other.example.test": {"127.0.0.1"},
	}}
	wantUA := UserAgent("test", "https://histor.example")
	g := newGuard(t, Config{AllowPrivate: true, Resolver: r, RootCAs: pool, UserAgent: wantUA})

	target, err := g.Check(context.Background(), "https://mcp.example.test:"+srv.port()+"/mcp")
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest("GET", target.URL.String(), nil)
	req.Header.Set("User-Agent", "something-else")
	resp, err := g.Client().Do(req)
	if err != nil {
		t.Fatalf("GET: %v", err)
	}
	drain(resp)
	mu.Lock()
	defer mu.Unlock()
	if host != "mcp.example.test:"+srv.port() || sni != "mcp.example.test" {
		t.Errorf("server saw Host %q and SNI %q", host, sni)
	}
	if ua != wantUA {
		t.Errorf("User-Agent %q, want %q", ua, wantUA)
	}
	if enc != "" {
		t.Errorf("Accept-Encoding %q: the client must not ask for compression itself", enc)
	}

	_, err = g.Client().Get("https://other.example.test:" + srv.port() + "/mcp")
	var certErr x509.HostnameError
	if !errors.As(err, &certErr) {
		t.Errorf("a certificate for another name was accepted: %v", err)
	}
}

// holdServer answers /hold only when a token arrives on release, and /fast at once.
type holdServer struct {
	*countingServer
	release chan struct{}
	mu      sync.Mutex
	holding int
}

func newHoldServer(t *testing.T) *holdServer {
	h := &holdServer{release: make(chan struct{})}
	h.countingServer = newCountingServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/hold" {
			h.mu.Lock()
			h.holding++
			h.mu.Unlock()
			select {
			case <-h.release:
			case <-r.Context().Done():
			}
			h.mu.Lock()
			h.holding--
			h.mu.Unlock()
		}
		io.WriteString(w, "done")
	}), nil)
	return h
}

func (h *holdServer) held() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.holding
}

func get(ctx context.Context, g *Guard, raw string) error {
	req, err := http.NewRequestWithContext(ctx, "GET", raw, nil)
	if err != nil {
		return err
	}
	resp, err := g.Client().Do(req)
	if err != nil {
		return err
	}
	drain(resp)
	return nil
}

func loopbackGuard(t *testing.T, names ...string) *Guard {
	r := &fakeResolver{table: map[string][]string{}}
	for _, n := range names {
		r.table[n] = []string{"127.0.0.1"}
	}
	return newGuard(t, Config{AllowPrivate: true, Resolver: r})
}

func TestThirdConnectionWaits(t *testing.T) {
	srv := newHoldServer(t)
	g := loopbackGuard(t, "a.test")
	u := "http://a.test:" + srv.port() + "/hold"
	errs := make(chan error, 3)
	for range 3 {
		go func() { errs <- get(context.Background(), g, u) }()
	}
	// That the third opens no connection while two are held is shown
	// deterministically under synctest (TestThirdConnectionWaitsSynctest);
	// here real sockets check the same path end to end.
	waitFor(t, "two held requests", func() bool { return srv.held() == 2 })
	if n := srv.held(); n != 2 {
		t.Fatalf("%d requests in the handler, want 2", n)
	}
	if n := srv.accepted.Load(); n != 2 {
		t.Fatalf("%d connections accepted while two were busy, want 2", n)
	}
	if n := g.limit.inUse("a.test"); n != 2 {
		t.Errorf("%d slots in use, want 2", n)
	}
	srv.release <- struct{}{}
	if err := <-errs; err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the third request to start", func() bool { return srv.held() == 2 })
	close(srv.release)
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if n, m := srv.accepted.Load(), srv.maxOpen.Load(); n != 2 || m > 2 {
		t.Errorf("%d connections accepted, %d open at once; want 2 and at most 2", n, m)
	}
}

func TestThirdConnectionTimesOut(t *testing.T) {
	srv := newHoldServer(t)
	g := loopbackGuard(t, "a.test")
	u := "http://a.test:" + srv.port() + "/hold"
	errs := make(chan error, 2)
	for range 2 {
		go func() { errs <- get(context.Background(), g, u) }()
	}
	waitFor(t, "two held requests", func() bool { return srv.held() == 2 })
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
	defer cancel()
	err := get(ctx, g, "http://a.test:"+srv.port()+"/fast")
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("third request: %v, want a deadline error", err)
	}
	if n := srv.accepted.Load(); n != 2 {
		t.Errorf("%d connections accepted, want 2", n)
	}
	close(srv.release)
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

// The bound is per host name, not per port: the http.Transport's own limit would not see a
// second port as the same host, the guard's slots do. Once the busy connections go idle, the
// other port gets a slot without waiting for the idle timeout.
func TestSlotsSpanPorts(t *testing.T) {
	one, two := newHoldServer(t), newHoldServer(t)
	g := loopbackGuard(t, "a.test")
	errs := make(chan error, 2)
	for range 2 {
		go func() { errs <- get(context.Background(), g, "http://a.test:"+one.port()+"/hold") }()
	}
	waitFor(t, "two held requests", func() bool { return one.held() == 2 })
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
	defer cancel()
	if err := get(ctx, g, "http://a.test:"+two.port()+"/fast"); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("request to a second port: %v, want a deadline error", err)
	}
	if n := two.accepted.Load(); n != 0 {
		t.Errorf("second port accepted %d connections while two were open", n)
	}
	close(one.release)
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	ctx2, cancel2 := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel2()
	if err := get(ctx2, g, "http://a.test:"+two.port()+"/fast"); err != nil {
		t.Errorf("second port after the first went idle: %v", err)
	}
}

func TestHostsDoNotBlockEachOther(t *testing.T) {
	srv := newHoldServer(t)
	g := loopbackGuard(t, "a.test", "b.test")
	errs := make(chan error, 2)
	for range 2 {
		go func() { errs <- get(context.Background(), g, "http://a.test:"+srv.port()+"/hold") }()
	}
	waitFor(t, "two held requests", func() bool { return srv.held() == 2 })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for i := range 4 {
		if err := get(ctx, g, fmt.Sprintf("http://b.test:%s/fast?i=%d", srv.port(), i)); err != nil {
			t.Errorf("b.test while a.test is full: %v", err)
		}
	}
	close(srv.release)
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

func TestAcquire(t *testing.T) {
	g := loopbackGuard(t)
	r1, err := g.Acquire(context.Background(), "Host.test")
	if err != nil {
		t.Fatal(err)
	}
	r2, err := g.Acquire(context.Background(), "host.test.")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := g.Acquire(ctx, "host.test"); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("third Acquire: %v, want a deadline error", err)
	}
	r1()
	r1() // idempotent: must not free a second slot
	r3, err := g.Acquire(context.Background(), "host.test")
	if err != nil {
		t.Fatal(err)
	}
	ctx2, cancel2 := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel2()
	if _, err := g.Acquire(ctx2, "host.test"); err == nil {
		t.Error("a double release freed an extra slot")
	}
	r2()
	r3()
	if n := len(g.limit.hosts); n != 0 {
		t.Errorf("%d limiter entries left after every release", n)
	}
}

// The URL the client sends must be exactly the checked one: query and path survive Check.
func TestTargetURLRoundTrips(t *testing.T) {
	g := newGuard(t, Config{Resolver: testResolver()})
	raw := "https://public.test:8443/a/b%2Fc?x=1&y=%7E"
	target, err := g.Check(context.Background(), raw)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := url.Parse(raw)
	if target.URL.String() != want.String() {
		t.Errorf("URL %q, want %q", target.URL, want)
	}
}
