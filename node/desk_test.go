package node

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/histor-observer/histor/gossip"
	"github.com/histor-observer/histor/gossip/wire/wiretest"
	"github.com/histor-observer/histor/log/awr"
	"github.com/histor-observer/histor/node/catalog/catalogtest"
	"github.com/histor-observer/histor/node/desk/desktest"
)

// deskNode is a node whose own crawl state holds the catalogtest fixture
// and many servers alike, and one peer's head checked here with a
// cosignature. The fixture's labels are label-shaped but unsigned, so the
// peer view stays empty here; the desk package's own tests render split
// views, observers and evidence from view models.
type deskNode struct {
	nd      *Node
	srv     *httptest.Server
	f       *catalogtest.Fixture
	peerDID string
}

func newDeskNode(t *testing.T, cfg Config) *deskNode {
	t.Helper()
	cfg.DataDir, cfg.LogOrigin, cfg.Now = t.TempDir(), "desk.example/log", func() time.Time { return catalogtest.Now }
	cfg.PublicURL = "https://desk.example"
	nd, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := nd.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nd.Close() })
	f := catalogtest.Build(t, nd.state, nd.Log())
	catalogtest.Populate(t, nd.state, nd.Log(), 240)
	if err := nd.catalog.Reload(); err != nil {
		t.Fatal(err)
	}
	_, priv, _ := ed25519.GenerateKey(nil)
	h := peerHead(t, priv, "peer.example/log", 5, 1)
	h.Cosigners = []string{"witness.example/w1"}
	did := awr.DIDKey(priv.Public().(ed25519.PublicKey))
	nd.fed.SetCheckedHead(did, h)
	dn := &deskNode{nd: nd, f: f, peerDID: did, srv: httptest.NewServer(nd.Handler())}
	t.Cleanup(dn.srv.Close)
	return dn
}

// page fetches a desk page, expects status and an HTML page that passes
// every desk check.
func (dn *deskNode) page(t *testing.T, method, path string, form url.Values, status int) string {
	t.Helper()
	var resp *http.Response
	var err error
	if method == http.MethodPost {
		resp, err = dn.srv.Client().PostForm(dn.srv.URL+path, form)
	} else {
		resp, err = dn.srv.Client().Get(dn.srv.URL + path)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != status {
		t.Fatalf("%s %s: %d, want %d: %s", method, path, resp.StatusCode, status, body)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "text/html; charset=utf-8" {
		t.Errorf("%s %s: Content-Type %q", method, path, ct)
	}
	for _, e := range desktest.Lint(body) {
		t.Errorf("%s %s: %v", method, path, e)
	}
	return string(body)
}

// TestDeskPages renders every desk page from the populated node and checks
// what each must show.
func TestDeskPages(t *testing.T) {
	dn := newDeskNode(t, Config{})
	f := dn.f
	cases := []struct {
		path   string
		status int
		want   []string
	}{
		{"/", 200, []string{"Servers 1–50 of 244", `href="/s/` + f.Changed + `"`, `class="changed"`, "desk.example/log", `aria-current="page"`}},
		{"/servers?q=server-001&state=changed", 200, []string{"io.example/server-00100", `<option value="changed" selected>`}},
		{"/servers?offset=200", 200, []string{"Servers 201–244 of 244", "Previous page"}},
		{"/servers?state=split", 200, []string{"No server matches", `<option value="split" selected>`}},
		{"/servers?state=bogus", 400, []string{"state must be one of"}},
		{"/s/" + f.Changed, 200, []string{"<mark>You must</mark>", `class="changed"`, "Tools added", "forecast",
			"/api/v1/labels/", "/badge/" + f.Changed + ".svg", "https://desk.example/s/" + f.Changed, "/changes/" + fmt.Sprint(f.ChangeSeq), "<pre tabindex=\"0\">"}},
		{"/s/" + f.Stable, 200, []string{"echo", "No pattern matched", "No change recorded"}},
		{"/s/" + f.Unreachable, 200, []string{"No tool set is on record", "timeout"}},
		{"/s/" + f.Delisted, 200, []string{"no longer listed"}},
		{"/s/" + f.Skipped, 200, []string{"io.example/templated"}},
		{"/s/0000000000000000", 404, []string{"no server with that id"}},
		{"/changes", 200, []string{`href="/changes/` + fmt.Sprint(f.ChangeSeq) + `"`, "io.example/changed"}},
		{"/changes/" + fmt.Sprint(f.ChangeSeq), 200, []string{"Tools added", "forecast", `class="diff-add"`}},
		{"/changes/999999", 404, []string{"no change with that id"}},
		{"/check", 200, []string{`<textarea id="tools" name="tools"`, `<label for="tools">`}},
		{"/log", 200, []string{`<a href="/log" aria-current="page">`, `<pre id="checkpoint">desk.example/log`, `<svg xmlns="http://www.w3.org/2000/svg" id="tree"`, `<script type="module" src="/static/log.js"></script>`}},
		{"/network", 200, []string{dn.peerDID[:20], "peer.example/log", "witness.example/w1", "5 labels", "holds no equivocation evidence"}},
		{"/about", 200, []string{"histor label verify", "histor audit https://desk.example", "cannot show"}},
	}
	for _, c := range cases {
		body := dn.page(t, http.MethodGet, c.path, nil, c.status)
		for _, w := range c.want {
			if !strings.Contains(body, w) {
				t.Errorf("GET %s lacks %q", c.path, w)
			}
		}
	}
}

// TestDeskCheck runs a check from the form: the same answer /api/v1/check
// gives, and the same limit.
func TestDeskCheck(t *testing.T) {
	dn := newDeskNode(t, Config{ChecksPerMinute: 2})
	tools, err := json.Marshal(map[string]any{"tools": dn.f.ChangedTools})
	if err != nil {
		t.Fatal(err)
	}
	form := url.Values{"endpoint": {"https://changed.example.com/mcp"}, "tools": {string(tools)}}
	body := dn.page(t, http.MethodPost, "/check", form, 200)
	for _, w := range []string{"<strong>same</strong>", CheckType, `href="/s/` + dn.f.Changed + `"`, "lists io.example/changed", "sha256-"} {
		if !strings.Contains(body, w) {
			t.Errorf("check answer lacks %q", w)
		}
	}
	body = dn.page(t, http.MethodPost, "/check", url.Values{"tools": {"not json"}}, 400)
	if !strings.Contains(body, "tools/list result") {
		t.Errorf("a refused paste does not say why")
	}
	dn.page(t, http.MethodPost, "/check", form, 429)
	resp, err := dn.srv.Client().Post(dn.srv.URL+"/api/v1/check", "application/json", strings.NewReader(`{"name":"x"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests {
		t.Errorf("the API after the desk's checks: %d, want 429 (one limiter)", resp.StatusCode)
	}
}

// peerHead is a head message of the log key priv under origin, verified
// as gossip verifies it.
func peerHead(t *testing.T, priv ed25519.PrivateKey, origin string, size uint64, root byte) *gossip.Head {
	t.Helper()
	return wiretest.VerifiedHead(t, priv, origin, size, [32]byte{root}, time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
}
