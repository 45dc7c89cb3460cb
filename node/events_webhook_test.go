package node

import (
	"context"
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/x509"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/histor-observer/histor/log/awr"
	"github.com/histor-observer/histor/node/catalog/catalogtest"
	"github.com/histor-observer/histor/node/events"
	"github.com/histor-observer/histor/node/webhook"
)

const hookSecret = "a-webhook-secret-of-forty-characters-ok!"

// hookReceiver is a TLS webhook receiver that checks every delivery's
// HMAC over the bytes it received and answers the statuses it is given in
// turn (the last one from then on).
type hookReceiver struct {
	srv      *httptest.Server
	mu       sync.Mutex
	statuses []int
	got      []hookDelivery
}

type hookDelivery struct {
	id, ts  string
	payload []byte
	sigOK   bool
}

func newHookReceiver(t *testing.T, statuses ...int) *hookReceiver {
	t.Helper()
	rc := &hookReceiver{statuses: statuses}
	rc.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		ts := r.Header.Get(webhook.HeaderTimestamp)
		want := "sha256=" + webhook.Sign(hookSecret, ts, body)
		rc.mu.Lock()
		rc.got = append(rc.got, hookDelivery{r.Header.Get(webhook.HeaderEventID), ts, body,
			hmac.Equal([]byte(want), []byte(r.Header.Get(webhook.HeaderSignature)))})
		status := rc.statuses[min(len(rc.got), len(rc.statuses))-1]
		rc.mu.Unlock()
		w.WriteHeader(status)
	}))
	t.Cleanup(rc.srv.Close)
	return rc
}

func (rc *hookReceiver) deliveries() []hookDelivery {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]hookDelivery(nil), rc.got...)
}

// configure points cfg's webhooks at the receiver, trusting its certificate.
func (rc *hookReceiver) configure(cfg *Config) {
	pool := x509.NewCertPool()
	pool.AddCert(rc.srv.Certificate())
	cfg.Webhooks = []webhook.Subscription{{URL: rc.srv.URL + "/hook", Secret: hookSecret}}
	cfg.WebhookRootCAs = pool
}

// TestWebhookEndToEnd runs a real node (its own stores, its event
// derivation, its deliverer) in a synctest bubble: a change record in its
// crawl state becomes a signed definitions event, the TLS receiver answers
// its first delivery 500 and sees the same event again, HMAC intact,
// exactly Backoff(1) later, answers 200, and the operator's delivery log
// shows both attempts.
func TestWebhookEndToEnd(t *testing.T) {
	rc := newHookReceiver(t, http.StatusInternalServerError, http.StatusOK)
	cfg := Config{DataDir: t.TempDir(), LogOrigin: "hooks.example/log", OperatorToken: operatorTokenForHooks,
		Now: func() time.Time { return catalogtest.Now }}
	rc.configure(&cfg)
	synctest.Test(t, func(t *testing.T) {
		nd, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := nd.Open(context.Background()); err != nil {
			t.Fatal(err)
		}
		defer nd.Close()
		catalogtest.Build(t, nd.state, nd.Log())
		nd.events.Kick()
		synctest.Wait()

		got := rc.deliveries()
		if len(got) != 1 {
			t.Fatalf("after the change: %d deliveries, want 1", len(got))
		}
		ev := verifyHookEvent(t, nd, got[0])
		if ev["kind"] != events.KindDefinitions {
			t.Errorf("delivered event of kind %v, want %s", ev["kind"], events.KindDefinitions)
		}
		time.Sleep(webhook.Backoff(1) - time.Second)
		synctest.Wait()
		if n := len(rc.deliveries()); n != 1 {
			t.Fatalf("a second before the retry is due: %d deliveries, want 1", n)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		got = rc.deliveries()
		if len(got) != 2 {
			t.Fatalf("when the retry is due: %d deliveries, want 2", len(got))
		}
		verifyHookEvent(t, nd, got[1])
		if got[1].id != got[0].id || string(got[1].payload) != string(got[0].payload) {
			t.Errorf("the retry carried event %s, the first attempt %s", got[1].id, got[0].id)
		}
		t0, _ := strconv.ParseInt(got[0].ts, 10, 64)
		t1, _ := strconv.ParseInt(got[1].ts, 10, 64)
		if d := time.Duration(t1-t0) * time.Second; d != webhook.Backoff(1) {
			t.Errorf("the retry came %v after the first attempt, want %v", d, webhook.Backoff(1))
		}
		checkDeliveryLog(t, nd, got[0].id)
	})
}

const operatorTokenForHooks = "an-operator-token-for-the-webhook-test"

// verifyHookEvent checks a delivery's HMAC and that its payload is an
// event signed by the node's log key.
func verifyHookEvent(t *testing.T, nd *Node, d hookDelivery) map[string]any {
	t.Helper()
	if !d.sigOK {
		t.Errorf("delivery of %s: X-Histor-Signature does not match the HMAC of what was received", d.id)
	}
	pub, err := awr.ParseDIDKey(nd.DID())
	if err != nil {
		t.Fatal(err)
	}
	ev, err := events.Verify(d.payload, ed25519.PublicKey(pub))
	if err != nil {
		t.Fatalf("delivered event: %v", err)
	}
	if ev["id"] != d.id {
		t.Errorf("X-Histor-Event-ID %s names event %v", d.id, ev["id"])
	}
	return ev
}

// checkDeliveryLog reads GET /api/v1/admin/webhooks as the operator: the
// retry and then the delivery, newest first, nothing pending.
func checkDeliveryLog(t *testing.T, nd *Node, id string) {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, "/api/v1/admin/webhooks", nil)
	req.Header.Set("x-histor-operator", operatorTokenForHooks)
	rec := httptest.NewRecorder()
	nd.Handler().ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		t.Fatalf("delivery log: %d %s", rec.Code, rec.Body)
	}
	var out struct {
		Webhooks []webhook.Status `json:"webhooks"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil || len(out.Webhooks) != 1 {
		t.Fatalf("delivery log %s: %v", rec.Body, err)
	}
	st := out.Webhooks[0]
	want := []struct {
		outcome string
		status  int
		attempt int
	}{{webhook.Delivered, 200, 2}, {webhook.Retry, 500, 1}}
	if len(st.Deliveries) != len(want) {
		t.Fatalf("delivery log holds %d records, want %d: %+v", len(st.Deliveries), len(want), st.Deliveries)
	}
	for i, w := range want {
		r := st.Deliveries[i]
		if r.Outcome != w.outcome || r.Status != w.status || r.Attempt != w.attempt || r.EventID != id {
			t.Errorf("record %d: %s %d attempt %d event %s, want %s %d attempt %d event %s",
				i, r.Outcome, r.Status, r.Attempt, r.EventID, w.outcome, w.status, w.attempt, id)
		}
	}
	if st.Pending != 0 || st.State.Attempts != 0 {
		t.Errorf("after the delivery: pending %d, attempts %d", st.Pending, st.State.Attempts)
	}
	req = httptest.NewRequest(http.MethodGet, "/api/v1/admin/webhooks", nil)
	rec = httptest.NewRecorder()
	nd.Handler().ServeHTTP(rec, req)
	if rec.Code == http.StatusOK {
		t.Errorf("the delivery log answered 200 without the operator token")
	}
}
