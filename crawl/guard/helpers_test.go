package guard

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"io"
	"log"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakeResolver answers from a table; a name with a sequence answers its n-th lookup with the
// n-th entry (the last one repeating), which is how a rebinding DNS server behaves.
type fakeResolver struct {
	mu      sync.Mutex
	table   map[string][]string
	seq     map[string][][]string
	lookups []string
}

func (r *fakeResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, h := range r.lookups {
		if h == host {
			n++
		}
	}
	r.lookups = append(r.lookups, host)
	answer, ok := r.table[host]
	if s := r.seq[host]; len(s) > 0 {
		answer, ok = s[min(n, len(s)-1)], true
	}
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	out := make([]netip.Addr, 0, len(answer))
	for _, a := range answer {
		out = append(out, netip.MustParseAddr(a))
	}
	return out, nil
}

func (r *fakeResolver) count(host string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, h := range r.lookups {
		if h == host {
			n++
		}
	}
	return n
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func newGuard(t testing.TB, cfg Config) *Guard {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = quietLogger()
	}
	g, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(g.Client().CloseIdleConnections)
	return g
}

// testCert makes a self-signed certificate for names, and a pool that trusts it.
func testCert(t testing.TB, names ...string) (tls.Certificate, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: names[0]},
		DNSNames:              names,
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(leaf)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, pool
}

// countingServer is a loopback server that counts requests and connections, and tracks how
// many connections were open at once.
type countingServer struct {
	*httptest.Server
	requests atomic.Int64
	accepted atomic.Int64
	open     atomic.Int64
	maxOpen  atomic.Int64
}

func newCountingServer(t testing.TB, h http.Handler, cert *tls.Certificate) *countingServer {
	t.Helper()
	s := &countingServer{}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.requests.Add(1)
		h.ServeHTTP(w, r)
	}))
	s.Config.ConnState = s.track
	s.Config.ErrorLog = log.New(io.Discard, "", 0) // refused handshakes are expected here
	if cert != nil {
		s.TLS = &tls.Config{Certificates: []tls.Certificate{*cert}}
		s.StartTLS()
	} else {
		s.Start()
	}
	t.Cleanup(s.Close)
	return s
}

func (s *countingServer) track(_ net.Conn, st http.ConnState) {
	switch st {
	case http.StateNew:
		s.accepted.Add(1)
		n := s.open.Add(1)
		for {
			m := s.maxOpen.Load()
			if n <= m || s.maxOpen.CompareAndSwap(m, n) {
				break
			}
		}
	case http.StateClosed, http.StateHijacked:
		s.open.Add(-1)
	}
}

func (s *countingServer) port() string {
	_, p, _ := net.SplitHostPort(s.Listener.Addr().String())
	return p
}

// standIn makes the guard's dialler send one "public" address to a loopback listener, so a
// test can run with AllowPrivate=false; every other address is dialled for real.
func standIn(g *Guard, public string, to net.Addr) *[]string {
	var mu sync.Mutex
	dialled := &[]string{}
	real := g.dial
	g.dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
		mu.Lock()
		*dialled = append(*dialled, addr)
		mu.Unlock()
		if addr == public {
			return real(ctx, network, to.String())
		}
		return real(ctx, network, addr)
	}
	return dialled
}

func drain(resp *http.Response) {
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
}

// waitFor polls cond until it holds or a few seconds pass.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
