package node

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/histor-observer/histor/e2e/browser"
	"github.com/histor-observer/histor/log/awr"
	"github.com/histor-observer/histor/log/format"
)

// The end-to-end harness for desk pages: a real node on loopback, a proxy
// in front of it that can forge the node's answers, and headless Chromium
// talking to the proxy (so localStorage belongs to one origin throughout).
// To add a desk step: site := newE2ESite(t, node); site.open(path); drive
// site.b with chromedp actions; site.b.Screenshot(name).

// e2eSite is a node behind a forging proxy, with a browser pointed at it.
type e2eSite struct {
	t     *testing.T
	node  *Node
	front *httptest.Server
	b     *browser.Browser
	// forge, when set, rewrites the body of every /api/v1/log/sth answer.
	forge atomic.Pointer[func([]byte) []byte]
}

// newE2ESite starts Chromium (skipping the test without one) and serves
// nd's handler behind the proxy.
func newE2ESite(t *testing.T, nd *Node) *e2eSite {
	t.Helper()
	s := &e2eSite{t: t, node: nd, b: browser.Start(t)}
	back := httptest.NewServer(nd.Handler())
	t.Cleanup(back.Close)
	u, _ := url.Parse(back.URL)
	proxy := httputil.NewSingleHostReverseProxy(u)
	proxy.ModifyResponse = s.rewrite
	s.front = httptest.NewServer(proxy)
	t.Cleanup(s.front.Close)
	return s
}

func (s *e2eSite) rewrite(resp *http.Response) error {
	f := s.forge.Load()
	if f == nil || resp.Request.URL.Path != "/api/v1/log/sth" {
		return nil
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return err
	}
	body = (*f)(body)
	resp.Body = io.NopCloser(strings.NewReader(string(body)))
	resp.ContentLength = int64(len(body))
	resp.Header.Set("Content-Length", fmt.Sprint(len(body)))
	return nil
}

func (s *e2eSite) setForge(f func([]byte) []byte) {
	if f == nil {
		s.forge.Store(nil)
		return
	}
	s.forge.Store(&f)
}

// open navigates to path on the site.
func (s *e2eSite) open(path string) {
	s.t.Helper()
	s.b.Do("opening "+path, chromedp.Navigate(s.front.URL+path))
}

// awaitCheck waits for the Log page's check to end and returns its state
// (data-state of the status region), its text and its time in ms.
func (s *e2eSite) awaitCheck() (state, text string, ms float64) {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(s.b.Ctx, browser.DefaultTimeout)
	defer cancel()
	type result struct {
		State, Text string
		MS          string
	}
	r, err := chromedp.Run(ctx, chromedp.Poll[result](`(() => {
		const s = document.getElementById("check-status");
		if (!s || s.dataset.state === "checking" || s.dataset.state === "idle") return false;
		return {State: s.dataset.state, Text: s.textContent, MS: s.dataset.ms || ""};
	})()`, chromedp.WithPollingInterval(5*time.Millisecond)))
	if err != nil {
		s.b.Screenshot("check-never-ended")
		s.t.Fatalf("waiting for the log check: %v", err)
	}
	fmt.Sscan(r.MS, &ms)
	return r.State, r.Text, ms
}

func (s *e2eSite) kept() string {
	s.t.Helper()
	return browser.Eval[string](s.b, `localStorage.getItem("histor.log.kept") || ""`)
}

// signHead signs a histor.sth/v1 head with the node's own log key.
func (s *e2eSite) signHead(key ed25519.PrivateKey, did string, size uint64, root [32]byte) []byte {
	s.t.Helper()
	b, err := format.SignSTH(key, did, size, root, fixedNow().Add(time.Hour))
	if err != nil {
		s.t.Fatal(err)
	}
	return b
}

// forgeSignature changes one character of a head's signature value: still
// base64url, another signature.
func forgeSignature(b []byte) []byte {
	var v map[string]any
	json.Unmarshal(b, &v)
	sig := v["signature"].(map[string]any)
	val := []byte(sig["value"].(string))
	val[10] ^= 'A' ^ 'B'
	if val[10] != 'A' && val[10] != 'B' {
		val[10] = 'A'
	}
	sig["value"] = string(val)
	out, _ := json.Marshal(v)
	return out
}

// TestLogPageInBrowser: keep a head, let the log grow, prove consistency
// in the browser, then watch the page refuse forged and forked heads with
// the reason while the kept head stays.
func TestLogPageInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("starts headless Chromium; skipped in -short")
	}
	tn := newTestNode(t, 40)
	s := newE2ESite(t, tn.node)
	s.open("/log")
	if state, text, _ := s.awaitCheck(); state != "signed" {
		t.Fatalf("first visit: %s: %s", state, text)
	}
	s.b.Screenshot("first-visit")
	s.b.Do("keeping the head", chromedp.Click(chromedp.ID("keep")))
	head40, _ := tn.node.Log().HeadAt(40)
	if got := s.kept(); got != string(head40.STH) {
		t.Fatalf("kept %q, want the head at 40", got)
	}

	tn.appendLabels(t, 2000)
	s.b.Do("reloading", chromedp.Reload())
	state, text, ms := s.awaitCheck()
	if state != "proven" || !strings.Contains(text, "2,040 labels") || !strings.Contains(text, "extends the kept head (40 labels)") {
		t.Fatalf("after growth: %s: %s", state, text)
	}
	t.Logf("40 → 2,040: %s (%.1f ms)", text, ms)
	s.b.Screenshot("grown-and-consistent")
	s.b.Do("keeping the grown head", chromedp.Click(chromedp.ID("keep")))
	kept := s.kept()
	tn.appendLabels(t, 10)

	key, did := tn.node.id.logKey, tn.node.id.did
	other := ed25519.NewKeyFromSeed(make([]byte, 32))
	head2050 := tn.node.Log().Latest()
	for _, tt := range []struct {
		name, reason string
		forge        func([]byte) []byte
	}{
		{"bad-signature", "signature does not verify", forgeSignature},
		{"root-rewritten", "signature does not verify", func(b []byte) []byte {
			root := hex.EncodeToString(head2050.Root[:])
			return []byte(strings.Replace(string(b), root, strings.Repeat("0", 64), 1))
		}},
		{"fork-same-size", "a fork: today's head has the kept head's size but another root", func([]byte) []byte {
			return s.signHead(key, did, 2040, sha256.Sum256([]byte("another tree")))
		}},
		{"fork-grown", "does not lead to today's root", func([]byte) []byte {
			return s.signHead(key, did, 2050, sha256.Sum256([]byte("another tree")))
		}},
		{"rollback", "fewer than the kept head's 2,040", func([]byte) []byte { return head40.STH }},
		{"another-key", "names another log key", func([]byte) []byte {
			return s.signHead(other, awr.DIDKey(other.Public().(ed25519.PublicKey)), 2050, head2050.Root)
		}},
	} {
		s.setForge(tt.forge)
		s.b.Do("reloading for "+tt.name, chromedp.Reload())
		state, text, _ := s.awaitCheck()
		if state != "refused" || !strings.Contains(text, tt.reason) || !strings.Contains(text, "The kept head (2,040 labels) stays") {
			t.Errorf("%s: %s: %s", tt.name, state, text)
		}
		if got := s.kept(); got != kept {
			t.Errorf("%s: the kept head was replaced by %q", tt.name, got)
		}
		if disabled := browser.Eval[bool](s.b, `document.getElementById("keep").disabled`); !disabled {
			t.Errorf("%s: a refused head can be kept", tt.name)
		}
		s.b.Screenshot("refused-" + tt.name)
	}

	s.setForge(nil)
	s.b.Do("reloading the honest node", chromedp.Reload())
	if state, text, _ := s.awaitCheck(); state != "proven" || !strings.Contains(text, "2,050 labels") {
		t.Errorf("back to the honest node: %s: %s", state, text)
	}
}

// TestLogPageInBrowserMillion times the in-browser check against a
// 1,000,000-leaf log (bigDataDir; set HISTOR_BENCH_DIR to keep it between
// runs): the kept head is one of the log's own earlier heads, and the page
// fetches today's head and one consistency proof and checks both. The
// issue's bound is 1 s; the time covers both fetches and both checks.
func TestLogPageInBrowserMillion(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a 1,000,000-leaf log and starts headless Chromium; skipped in -short")
	}
	if browser.Executable() == "" {
		t.Skip("no Chromium: install Debian's chromium or set HISTOR_CHROMIUM")
	}
	nd, err := New(Config{DataDir: bigDataDir(t)})
	if err != nil {
		t.Fatal(err)
	}
	if err := nd.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nd.Close() })
	s := newE2ESite(t, nd)
	s.open("/log")
	s.awaitCheck()
	for _, keptSize := range []uint64{16384, 606208, 999424} { // heads the build signed (one per batch)
		h, err := nd.Log().HeadAt(keptSize)
		if err != nil {
			t.Fatal(err)
		}
		doc, _ := json.Marshal(string(h.STH))
		// The bound is on the check, so the fastest of three rounds is
		// compared: one round slowed by the loaded machine's other tests says
		// nothing about the check, three slow ones do.
		fastest := math.Inf(1)
		for round := range 3 {
			browser.Eval[bool](s.b, `(localStorage.setItem("histor.log.kept", `+string(doc)+`), true)`)
			s.b.Do("reloading", chromedp.Reload())
			state, text, ms := s.awaitCheck()
			if state != "proven" || !strings.Contains(text, "1,000,000 labels") {
				t.Fatalf("kept %d: %s: %s", keptSize, state, text)
			}
			t.Logf("kept %d → 1,000,000, round %d: %.1f ms in the browser (%s)", keptSize, round, ms, text)
			fastest = min(fastest, ms)
		}
		if fastest >= 1000 {
			t.Errorf("kept %d: the check took %.1f ms at best of three, over 1 s", keptSize, fastest)
		}
	}
	s.b.Screenshot("million-consistent")

	h := nd.Handler()
	start := time.Now()
	for range 20 {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/log", nil))
		if rec.Code != 200 {
			t.Fatalf("GET /log: %d", rec.Code)
		}
	}
	t.Logf("GET /log at 1,000,000 labels: %v server time a page", time.Since(start)/20)
}
