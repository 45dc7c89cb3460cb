package witness_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/histor-observer/histor/internal/promset/promtest"
	"github.com/histor-observer/histor/witness"
)

func post(t testing.TB, srv *httptest.Server, body []byte) (*http.Response, []byte) {
	t.Helper()
	resp, err := srv.Client().Post(srv.URL+"/add-checkpoint", "text/plain", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

// TestHandler drives the HTTP routes: the answers' status, type and body as the spec gives.
func TestHandler(t *testing.T) {
	l := newTestLog(t, "example.test/log")
	tw := newWitness(t, l)
	srv := httptest.NewServer(tw.Handler())
	defer srv.Close()

	resp, body := post(t, srv, l.request(t, 0, 3))
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	checkCosigned(t, l, l.checkpoint(t, 3), body)

	resp, body = post(t, srv, l.request(t, 0, 5))
	if resp.StatusCode != 409 || resp.Header.Get("Content-Type") != "text/x.tlog.size" || string(body) != "3\n" {
		t.Fatalf("409: %d %q %q", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	huge := append(l.request(t, 3, 5), bytes.Repeat([]byte("x"), witness.MaxBodyBytes)...)
	if resp, _ = post(t, srv, huge); resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("oversized body: %d", resp.StatusCode)
	}
	if got := promtest.Sum(t, tw.reg, "histor_witness_add_checkpoint_requests_total", "result", "too_large"); got != 1 {
		t.Fatalf("too_large counted %v", got)
	}
	get, err := srv.Client().Get(srv.URL + "/add-checkpoint")
	if err != nil {
		t.Fatal(err)
	}
	get.Body.Close()
	if get.StatusCode != http.StatusMethodNotAllowed {
		t.Fatalf("GET add-checkpoint: %d", get.StatusCode)
	}
}

// TestMonitoringRoute: GET /<hex SHA-256(origin)>/checkpoint serves the checkpoint cosigned
// last, with the log's signature and the cosignature, and 404 before the first.
func TestMonitoringRoute(t *testing.T) {
	l := newTestLog(t, "example.test/log")
	tw := newWitness(t, l)
	srv := httptest.NewServer(tw.Handler())
	defer srv.Close()
	sum := sha256.Sum256([]byte(l.origin))
	url := srv.URL + "/" + hex.EncodeToString(sum[:]) + "/checkpoint"
	fetch := func() (int, []byte) {
		resp, err := srv.Client().Get(url)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	if code, _ := fetch(); code != 404 {
		t.Fatalf("before any cosignature: %d", code)
	}
	// A submission carrying a signature line by a key the witness does not know: the
	// monitoring copy leaves it out.
	cp := l.checkpoint(t, 4)
	extra := newTestLog(t, "someone.test/else")
	withExtra := extra.signText(t, string(cp[:bytes.Index(cp, []byte("\n\n"))+1]))
	sigLine := withExtra[bytes.LastIndex(withExtra, []byte("\n\u2014"))+1:]
	cp = append(bytes.Clone(cp), sigLine...)
	tw.mustCosign(t, witness.Request{Checkpoint: cp}.Marshal())
	code, body := fetch()
	if code != 200 {
		t.Fatalf("status %d", code)
	}
	checkCosigned(t, l, nil, body)
	if strings.Contains(string(body), "someone.test/else") || strings.Count(string(body), "\u2014") != 2 {
		t.Fatalf("monitoring checkpoint %q", body)
	}
	resp, err := srv.Client().Get(srv.URL + "/" + strings.Repeat("ab", 32) + "/checkpoint")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 404 {
		t.Fatalf("unknown log: %d", resp.StatusCode)
	}
}
