package webhook

import (
	"context"
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/rand"
	"crypto/x509"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/histor-observer/histor/log/awr"
	"github.com/histor-observer/histor/node/events"
)

const secret = "0123456789abcdef0123456789abcdef-test"

// receiver is a TLS webhook receiver that checks every delivery's HMAC and
// answers the statuses it is given in turn (the last one from then on).
type receiver struct {
	srv      *httptest.Server
	mu       sync.Mutex
	statuses []int
	got      []delivery
}

type delivery struct {
	id, ts  string
	payload []byte
	sigOK   bool
}

func newReceiver(t *testing.T, statuses ...int) *receiver {
	rc := &receiver{statuses: statuses}
	rc.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		ts := r.Header.Get(HeaderTimestamp)
		want := "sha256=" + Sign(secret, ts, body)
		rc.mu.Lock()
		rc.got = append(rc.got, delivery{r.Header.Get(HeaderEventID), ts, body,
			hmac.Equal([]byte(want), []byte(r.Header.Get(HeaderSignature)))})
		status := rc.statuses[min(len(rc.got), len(rc.statuses))-1]
		rc.mu.Unlock()
		w.WriteHeader(status)
	}))
	t.Cleanup(rc.srv.Close)
	return rc
}

func (rc *receiver) deliveries() []delivery {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]delivery(nil), rc.got...)
}

func (rc *receiver) config() Config {
	pool := x509.NewCertPool()
	pool.AddCert(rc.srv.Certificate())
	return Config{Subscriptions: []Subscription{{URL: rc.srv.URL + "/hook", Secret: secret}}, RootCAs: pool}
}

func appendEvent(t *testing.T, s *events.Store, n int) string {
	t.Helper()
	pub, key, _ := ed25519.GenerateKey(rand.Reader)
	doc, id, err := events.Signer{Key: key, DID: awr.DIDKey(pub)}.Sign(events.Fact{
		Target: "aaaaaaaaaaaaaaaa", Kind: events.KindDefinitions, ObservedAt: time.Unix(1e9, 0), Evidence: map[string]any{"n": n}})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Append(doc, id, "aaaaaaaaaaaaaaaa"); err != nil {
		t.Fatal(err)
	}
	return id
}

// run starts d in the bubble and returns its stop.
func run(d *Deliverer) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { d.Run(ctx); close(done) }()
	return func() { cancel(); <-done }
}

// TestRetryAfter500 is the receiver's view of a failed delivery: the first
// POST is answered 500, the same event comes again exactly Backoff(1) = 60
// s later with a valid HMAC and is answered 200, and the delivery log shows
// both attempts.
func TestRetryAfter500(t *testing.T) {
	rc := newReceiver(t, 500, 200)
	cfg := rc.config()
	dir := t.TempDir()
	synctest.Test(t, func(t *testing.T) {
		s, err := events.Open(dir, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		d, err := New(cfg, s, "webhook/")
		if err != nil {
			t.Fatal(err)
		}
		stop := run(d)
		defer stop()
		id := appendEvent(t, s, 1)
		synctest.Wait()
		if got := rc.deliveries(); len(got) != 1 {
			t.Fatalf("after the append: %d deliveries, want 1", len(got))
		}
		time.Sleep(Backoff(1) - time.Second)
		synctest.Wait()
		if got := rc.deliveries(); len(got) != 1 {
			t.Fatalf("a second before the retry is due: %d deliveries, want 1", len(got))
		}
		time.Sleep(time.Second)
		synctest.Wait()
		got := rc.deliveries()
		if len(got) != 2 {
			t.Fatalf("when the retry is due: %d deliveries, want 2", len(got))
		}
		for i, g := range got {
			if !g.sigOK || g.id != id {
				t.Errorf("delivery %d: signature ok %v, event id %q (want %q)", i, g.sigOK, g.id, id)
			}
		}
		t0, _ := strconv.ParseInt(got[0].ts, 10, 64)
		t1, _ := strconv.ParseInt(got[1].ts, 10, 64)
		if time.Duration(t1-t0)*time.Second != Backoff(1) {
			t.Errorf("retry came %d s after the first attempt, want %v", t1-t0, Backoff(1))
		}
		checkLog(t, d, []string{Delivered, Retry}, []int{200, 500})
	})
}

func checkLog(t *testing.T, d *Deliverer, outcomes []string, statuses []int) {
	t.Helper()
	log, err := d.Log(10)
	if err != nil || len(log) != 1 {
		t.Fatalf("log: %v, %v", log, err)
	}
	recs := log[0].Deliveries
	if len(recs) != len(outcomes) {
		t.Fatalf("log holds %d records, want %d: %+v", len(recs), len(outcomes), recs)
	}
	for i, r := range recs {
		if r.Outcome != outcomes[i] || r.Status != statuses[i] {
			t.Errorf("record %d: %s %d, want %s %d", i, r.Outcome, r.Status, outcomes[i], statuses[i])
		}
	}
	if log[0].Pending != 0 || log[0].State.Attempts != 0 {
		t.Errorf("after delivery: pending %d, attempts %d", log[0].Pending, log[0].State.Attempts)
	}
}

// TestRestartResumes stops the node's deliverer while a retry is pending,
// reopens the store and starts a new one: it waits out the same backoff
// and delivers.
func TestRestartResumes(t *testing.T) {
	rc := newReceiver(t, 500, 200)
	cfg := rc.config()
	dir := t.TempDir()
	synctest.Test(t, func(t *testing.T) {
		s, err := events.Open(dir, nil)
		if err != nil {
			t.Fatal(err)
		}
		d, _ := New(cfg, s, "webhook/")
		stop := run(d)
		appendEvent(t, s, 1)
		synctest.Wait()
		stop()
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(30 * time.Second) // down for half the backoff
		if s, err = events.Open(dir, nil); err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		d, _ = New(cfg, s, "webhook/")
		stop = run(d)
		defer stop()
		synctest.Wait()
		if n := len(rc.deliveries()); n != 1 {
			t.Fatalf("right after the restart: %d deliveries, want 1 (the retry is not due)", n)
		}
		time.Sleep(30 * time.Second)
		synctest.Wait()
		if n := len(rc.deliveries()); n != 2 {
			t.Fatalf("when the retry is due: %d deliveries, want 2", n)
		}
		checkLog(t, d, []string{Delivered, Retry}, []int{200, 500})
	})
}

func TestRefusedConfigs(t *testing.T) {
	cases := []struct {
		name string
		sub  Subscription
	}{
		{"http", Subscription{URL: "http://hooks.example/x", Secret: secret}},
		{"no scheme", Subscription{URL: "hooks.example/x", Secret: secret}},
		{"ftp", Subscription{URL: "ftp://hooks.example/x", Secret: secret}},
		{"user info", Subscription{URL: "https://u:p@hooks.example/x", Secret: secret}},
		{"no host", Subscription{URL: "https:///x", Secret: secret}},
		{"short secret", Subscription{URL: "https://hooks.example/x", Secret: strings.Repeat("s", MinSecret-1)}},
	}
	for _, c := range cases {
		cfg := Config{Subscriptions: []Subscription{c.sub}}
		if err := cfg.Validate(); !errors.Is(err, ErrConfig) {
			t.Errorf("%s: Validate = %v, want ErrConfig", c.name, err)
		}
	}
	ok := Config{Subscriptions: []Subscription{{URL: "https://hooks.example/x", Secret: strings.Repeat("s", MinSecret)}}}
	if err := ok.Validate(); err != nil {
		t.Errorf("valid config refused: %v", err)
	}
	twice := Config{Subscriptions: []Subscription{ok.Subscriptions[0], ok.Subscriptions[0]}}
	if err := twice.Validate(); !errors.Is(err, ErrConfig) {
		t.Errorf("a URL configured twice: %v", err)
	}
}

func TestBackoff(t *testing.T) {
	for n, want := range map[int]time.Duration{0: 30 * time.Second, 1: 60 * time.Second, 2: 120 * time.Second,
		5: 960 * time.Second, 11: 61440 * time.Second, 12: 86400 * time.Second, 40: 86400 * time.Second} {
		if got := Backoff(n); got != want {
			t.Errorf("Backoff(%d) = %v, want %v", n, got, want)
		}
	}
}
