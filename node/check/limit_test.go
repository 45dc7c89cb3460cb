package check

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/histor-observer/histor/internal/httpx"
	"github.com/histor-observer/histor/log/mtl"
)

var byName = body(`"name":"io.example/one"`)

func TestCheckBodyBound(t *testing.T) {
	f := newCheckFixture(t, nil)
	fits := byName + strings.Repeat(" ", MaxBodyBytes-len(byName))
	if w := f.post(t, "192.0.2.1:1", fits); w.Code != http.StatusOK {
		t.Errorf("a body of exactly 2 MiB: %d %.200s", w.Code, w.Body)
	}
	over := fits + " "
	if w := f.post(t, "192.0.2.1:1", over); w.Code != http.StatusRequestEntityTooLarge {
		t.Errorf("2 MiB + 1 with Content-Length: %d", w.Code)
	}
	// Without a Content-Length the read itself stops at the bound.
	req := httptest.NewRequest(http.MethodPost, "/api/v1/check", io.MultiReader(strings.NewReader(over), neverEnding{}))
	req.ContentLength = -1
	req.RemoteAddr = "192.0.2.1:1"
	w := httptest.NewRecorder()
	f.h.ServeHTTP(w, req)
	if w.Code != http.StatusRequestEntityTooLarge || !strings.Contains(w.Body.String(), "2097152") {
		t.Errorf("endless chunked body: %d %s", w.Code, w.Body)
	}
}

// neverEnding is an endless body.
type neverEnding struct{}

func (neverEnding) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = ' '
	}
	return len(p), nil
}

// TestCheckFlood: one address past 30 checks in a minute is answered 429
// with Retry-After, while another address is still answered.
func TestCheckFlood(t *testing.T) {
	f := newCheckFixture(t, nil)
	for i := range DefaultChecksPerMinute {
		if w := f.post(t, "198.51.100.1:5000", byName); w.Code != http.StatusOK {
			t.Fatalf("check %d: %d", i, w.Code)
		}
	}
	w := f.post(t, "198.51.100.1:5001", byName) // another port, the same client
	retry, err := strconv.Atoi(w.Header().Get("Retry-After"))
	if w.Code != http.StatusTooManyRequests || err != nil || retry < 1 || retry > 60 {
		t.Fatalf("check 31: %d, Retry-After %q", w.Code, w.Header().Get("Retry-After"))
	}
	if w := f.post(t, "198.51.100.2:5000", byName); w.Code != http.StatusOK {
		t.Errorf("another address during the flood: %d", w.Code)
	}
	// IPv6 clients count by /64.
	for i := range DefaultChecksPerMinute {
		f.post(t, "[2001:db8:1:2::"+strconv.FormatInt(int64(i+1), 16)+"]:1", byName)
	}
	if w := f.post(t, "[2001:db8:1:2:ffff::1]:1", byName); w.Code != http.StatusTooManyRequests {
		t.Errorf("a 31st check from the same /64: %d", w.Code)
	}
	if w := f.post(t, "[2001:db8:1:3::1]:1", byName); w.Code != http.StatusOK {
		t.Errorf("the next /64: %d", w.Code)
	}
}

// TestCheckForwardedFor: X-Forwarded-For names the client only when the
// peer is a trusted proxy.
func TestCheckForwardedFor(t *testing.T) {
	f := newCheckFixture(t, func(c *Config) {
		c.ChecksPerMinute = 2
		c.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}
	})
	via := func(peer, xff string) int {
		return f.post(t, peer+":443", byName, "X-Forwarded-For: "+xff).Code
	}
	// Behind the proxy, each forwarded client has its own budget.
	for _, xff := range []string{"203.0.113.5, 10.1.1.1", "203.0.113.5", "203.0.113.6", "203.0.113.6"} {
		if code := via("10.0.0.1", xff); code != http.StatusOK {
			t.Fatalf("via the proxy for %s: %d", xff, code)
		}
	}
	if code := via("10.0.0.2", "203.0.113.5"); code != http.StatusTooManyRequests {
		t.Errorf("a third check for 203.0.113.5 through another proxy: %d", code)
	}
	// A forged leftmost hop does not make a new client.
	if code := via("10.0.0.1", "192.0.2.99, 203.0.113.6"); code != http.StatusTooManyRequests {
		t.Errorf("forged hop left of a limited client: %d", code)
	}
	// From an untrusted peer the header is ignored: rotating it is no escape.
	for i, xff := range []string{"203.0.113.7", "203.0.113.8", "203.0.113.9"} {
		want := http.StatusOK
		if i == 2 {
			want = http.StatusTooManyRequests
		}
		if code := via("192.0.2.50", xff); code != want {
			t.Errorf("untrusted peer, X-Forwarded-For %s: %d, want %d", xff, code, want)
		}
	}
}

func TestCheckPreflight(t *testing.T) {
	f := newCheckFixture(t, nil)
	req := httptest.NewRequest(http.MethodOptions, "/api/v1/check", nil)
	req.Header.Set("Origin", "https://desk.example")
	req.Header.Set("Access-Control-Request-Method", "POST")
	req.Header.Set("Access-Control-Request-Headers", "content-type")
	w := httptest.NewRecorder()
	f.h.ServeHTTP(w, req)
	h := w.Header()
	if w.Code != http.StatusNoContent || h.Get("Access-Control-Allow-Origin") != "*" ||
		h.Get("Access-Control-Allow-Methods") != "POST, OPTIONS" || h.Get("Access-Control-Allow-Headers") != "Content-Type" ||
		h.Get("Access-Control-Max-Age") == "" || w.Body.Len() != 0 {
		t.Errorf("preflight: %d %v %q", w.Code, h, w.Body)
	}
	for _, m := range []string{http.MethodGet, http.MethodPut, http.MethodDelete} {
		req := httptest.NewRequest(m, "/api/v1/check", nil)
		w := httptest.NewRecorder()
		f.h.ServeHTTP(w, req)
		if w.Code != http.StatusMethodNotAllowed || w.Header().Get("Allow") != "POST, OPTIONS" {
			t.Errorf("%s: %d, Allow %q", m, w.Code, w.Header().Get("Allow"))
		}
	}
}

// TestCheckContribute: contribute:true adds one (target, digest, day) count,
// once per client, target and day, and nothing without a digest.
func TestCheckContribute(t *testing.T) {
	f := newCheckFixture(t, nil)
	id := mtl.ServerID("io.example/one", endpointOK)
	// A digest holding '/' (about half of all), to be sure the store keeps it.
	slash := "sha256-" + base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{0xff}, 32)) // all "/"
	contrib := body(`"endpoint":"`+endpointOK+`"`, `"toolSetDigest":"`+slash+`"`, `"contribute":true`)
	steps := []struct {
		remote, body string
		contributed  bool
		count        int64
	}{
		{"192.0.2.1:1", contrib, true, 1},
		{"192.0.2.1:2", contrib, false, 1}, // the same client, the same day
		{"192.0.2.2:1", contrib, true, 2},
		{"192.0.2.3:1", body(`"endpoint":"`+endpointOK+`"`, `"contribute":true`), false, 2},           // no digest
		{"192.0.2.4:1", body(`"endpoint":"`+endpointOK+`"`, `"toolSetDigest":"`+slash+`"`), false, 2}, // not asked
		{"192.0.2.5:1", body(`"endpoint":"https://nowhere.example/"`, `"toolSetDigest":"`+slash+`"`, `"contribute":true`), false, 2},
	}
	for i, s := range steps {
		a := f.answer(t, s.remote, s.body)
		if got := a["contributed"] == true; got != s.contributed {
			t.Errorf("step %d: contributed = %v, want %v", i, got, s.contributed)
		}
		reps, err := f.st.ClientReports(id, "2026-09-23")
		var n int64
		for _, r := range reps {
			if r.Digest != slash || r.Day != "2026-09-23" {
				t.Fatalf("report %+v", r)
			}
			n += r.Count
		}
		if err != nil || n != s.count {
			t.Fatalf("step %d: %d reports (%v), want %d", i, n, err, s.count)
		}
	}
}

// TestCheckLoopbackAddresses: over real loopback TCP, a client at
// 127.0.0.1 that used its checks does not hold up one at 127.0.0.2.
func TestCheckLoopbackAddresses(t *testing.T) {
	f := newCheckFixture(t, func(c *Config) { c.ChecksPerMinute = 3 })
	srv := httptest.NewServer(f.h)
	defer srv.Close()
	client := func(local string) *http.Client {
		d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}, Timeout: 5 * time.Second}
		return &http.Client{Transport: &http.Transport{DialContext: d.DialContext}}
	}
	post := func(c *http.Client) (int, error) {
		resp, err := c.Post(srv.URL+"/api/v1/check", "application/json", strings.NewReader(byName))
		if err != nil {
			return 0, err
		}
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	a, b := client("127.0.0.1"), client("127.0.0.2")
	if _, err := post(b); err != nil {
		t.Skipf("this machine cannot dial from 127.0.0.2: %v", err)
	}
	for range 3 {
		if code, err := post(a); code != http.StatusOK {
			t.Fatalf("127.0.0.1: %d %v", code, err)
		}
	}
	if code, _ := post(a); code != http.StatusTooManyRequests {
		t.Errorf("127.0.0.1's 4th check: %d", code)
	}
	if code, _ := post(b); code != http.StatusOK {
		t.Errorf("127.0.0.2's 2nd check: %d", code)
	}
}

// TestContributionsPerClient: one client counts for at most
// ContributionsPerClientDay targets a day; another client still counts.
func TestContributionsPerClient(t *testing.T) {
	f := newCheckFixture(t, nil)
	c := f.c
	digest := digestOf(t, toolsNow)
	for i := range ContributionsPerClientDay + 1 {
		tg := &Target{ID: fmt.Sprintf("%016x", i)}
		q := &Query{contribute: true, digest: digest}
		want := i < ContributionsPerClientDay
		if got := c.contribute(q, tg, httpx.KeyOf(netip.MustParseAddr("192.0.2.7")), fixedNow()); got != want {
			t.Fatalf("target %d: contributed %v, want %v", i, got, want)
		}
	}
	q := &Query{contribute: true, digest: digest}
	if !c.contribute(q, &Target{ID: "00000000000000ff"}, httpx.KeyOf(netip.MustParseAddr("192.0.2.8")), fixedNow()) {
		t.Error("another client was refused")
	}
}
