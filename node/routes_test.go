package node

import (
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/histor-observer/histor/log/awr"
	"github.com/histor-observer/histor/log/format"
	"github.com/histor-observer/histor/node/logapi"
)

// routeSize spans two full level-0 tiles and a partial one, so every tile
// shape is served.
const routeSize = 600

type routeCase struct {
	path   string
	status int
	ctype  string // expected Content-Type prefix; "" skips the check
	cache  string // expected Cache-Control; "" skips the check
}

func TestRoutes(t *testing.T) {
	tn := newTestNode(t, routeSize)
	id0 := url.PathEscape(labelID(0))
	sriPath := "/api/v1/toolsets/" + tn.sri
	cases := []routeCase{
		{"/health", 200, "application/json", "no-store"},
		{"/api/v1/issuer", 200, "application/json", ""},
		{"/api/v1/log/sth", 200, "application/json", "no-cache"},
		{"/api/v1/log/sth/600", 200, "application/json", ""},
		{"/api/v1/log/sth/0", 404, "application/json", "no-store"},
		{"/api/v1/log/sth/7", 404, "application/json", "no-store"},
		{"/api/v1/log/sth/007", 400, "application/json", ""},
		{"/api/v1/log/sth/x", 400, "application/json", ""},
		{"/api/v1/log/sth/99999999999999999999", 400, "application/json", ""},
		{"/api/v1/log/entries", 200, "application/json", ""},
		{"/api/v1/log/entries?start=5&end=3", 400, "application/json", ""},
		{"/api/v1/log/entries?start=-1", 400, "application/json", ""},
		{"/api/v1/log/entries?start=1&start=2", 400, "application/json", ""},
		{"/api/v1/log/proof/inclusion?leaf_index=3&tree_size=600", 200, "application/json", cacheImmutable},
		{"/api/v1/log/proof/inclusion?leaf_index=3", 400, "application/json", ""},
		{"/api/v1/log/proof/inclusion?tree_size=600", 400, "application/json", ""},
		{"/api/v1/log/proof/inclusion?leaf_index=600&tree_size=600", 400, "application/json", ""},
		{"/api/v1/log/proof/inclusion?leaf_index=0&tree_size=0", 400, "application/json", ""},
		{"/api/v1/log/proof/inclusion?leaf_index=0&tree_size=601", 400, "application/json", ""},
		{"/api/v1/log/proof/inclusion?leaf_index=a&tree_size=601", 400, "application/json", ""},
		{"/api/v1/log/proof/consistency?first=10&second=600", 200, "application/json", cacheImmutable},
		{"/api/v1/log/proof/consistency?first=600&second=600", 200, "application/json", ""},
		{"/api/v1/log/proof/consistency?first=0&second=600", 400, "application/json", ""},
		{"/api/v1/log/proof/consistency?first=11&second=10", 400, "application/json", ""},
		{"/api/v1/log/proof/consistency?first=1&second=601", 400, "application/json", ""},
		{"/api/v1/log/proof/consistency?first=1", 400, "application/json", ""},
		{"/api/v1/labels/" + id0, 200, "application/vc", cacheImmutable},
		{"/api/v1/labels/urn:uuid:nope", 404, "application/json", ""},
		{"/api/v1/labels/" + strings.Repeat("a", logapi.MaxIDBytes+1), 400, "application/json", ""},
		{"/api/v1/labels/", 404, "application/json", ""},
		{"/api/v1/labels/" + id0 + "/other", 404, "application/json", ""},
		{"/api/v1/labels/" + id0 + "/proof", 200, "application/json", ""},
		{"/api/v1/labels/" + id0 + "/proof?tree_size=600", 200, "application/json", ""},
		{"/api/v1/labels/" + id0 + "/proof?tree_size=599", 409, "application/json", ""},
		{"/api/v1/labels/" + id0 + "/proof?tree_size=0", 400, "application/json", ""},
		{"/api/v1/labels/urn:uuid:nope/proof", 404, "application/json", ""},
		{sriPath, 200, "application/json", cacheImmutable},
		{"/api/v1/descriptors/" + tn.sri, 404, "application/json", ""},
		{"/api/v1/pattern-sets/" + tn.sri, 404, "application/json", ""},
		{"/api/v1/record-sets/" + tn.sri, 404, "application/json", ""},
		{"/api/v1/toolsets/sha256-AAAA", 400, "application/json", ""},
		{"/api/v1/toolsets/" + url.PathEscape(tn.sri), 200, "application/json", cacheImmutable},
		{"/api/v1/blobs/" + tn.sri, 404, "application/json", ""},
		{"/api/v1/unknown", 404, "application/json", ""},
		{"/log/checkpoint", 200, "text/plain; charset=utf-8", "no-cache"},
		{"/log/tile/0/000", 200, "application/octet-stream", cacheImmutable},
		{"/log/tile/0/001", 200, "application/octet-stream", cacheImmutable},
		{"/log/tile/0/002.p/88", 200, "application/octet-stream", "public, max-age=3600"},
		{"/log/tile/1/000.p/2", 200, "application/octet-stream", ""},
		{"/log/tile/0/002", 404, "application/json", ""},
		{"/log/tile/0/003.p/1", 404, "application/json", ""},
		{"/log/tile/1/000", 404, "application/json", ""},
		{"/log/tile/0/x000/000", 400, "application/json", ""},
		{"/log/tile/00/000", 400, "application/json", ""},
		{"/log/tile/64/000", 400, "application/json", ""},
		{"/log/tile/0/000.p/256", 400, "application/json", ""},
		{"/log/tile/entries/000", 200, "application/octet-stream", cacheImmutable},
		{"/log/tile/entries/002.p/88", 200, "application/octet-stream", ""},
		{"/log/tile/entries/002", 404, "application/json", ""},
		{"/log/tile/entries/2", 400, "application/json", ""},
		{"/log/tile", 404, "application/json", ""},
		{"/log/", 404, "application/json", ""},
		{"/", 200, "text/html; charset=utf-8", "no-cache"}, // the desk
	}
	for _, c := range cases {
		resp, body := tn.get(t, c.path)
		if resp.StatusCode != c.status {
			t.Errorf("GET %s: status %d, want %d (%s)", c.path, resp.StatusCode, c.status, body)
			continue
		}
		checkHeaders(t, c, resp)
		if resp.StatusCode >= 400 {
			checkErrorBody(t, c.path, body)
		}
	}
}

func checkHeaders(t *testing.T, c routeCase, resp *http.Response) {
	t.Helper()
	if got := resp.Header.Get("Access-Control-Allow-Origin"); got != "*" {
		t.Errorf("GET %s: Access-Control-Allow-Origin %q", c.path, got)
	}
	if c.ctype != "" && !strings.HasPrefix(resp.Header.Get("Content-Type"), c.ctype) {
		t.Errorf("GET %s: Content-Type %q, want %q", c.path, resp.Header.Get("Content-Type"), c.ctype)
	}
	if c.cache != "" && resp.Header.Get("Cache-Control") != c.cache {
		t.Errorf("GET %s: Cache-Control %q, want %q", c.path, resp.Header.Get("Cache-Control"), c.cache)
	}
}

// checkErrorBody requires HISTOR's error shape, {"detail": "<non-empty>"}.
func checkErrorBody(t *testing.T, path string, body []byte) {
	t.Helper()
	var e struct{ Detail string }
	if err := json.Unmarshal(body, &e); err != nil || e.Detail == "" {
		t.Errorf("GET %s: error body %q is not {\"detail\": ...}", path, body)
	}
}

func TestMethodNotAllowed(t *testing.T) {
	tn := newTestNode(t, 1)
	for _, m := range []string{"POST", "PUT", "DELETE", "PATCH"} {
		req, _ := http.NewRequest(m, tn.srv.URL+"/api/v1/log/sth", nil)
		resp, err := tn.srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "GET, HEAD" {
			t.Errorf("%s: status %d, Allow %q", m, resp.StatusCode, resp.Header.Get("Allow"))
		}
	}
	resp, err := tn.srv.Client().Head(tn.srv.URL + "/log/checkpoint")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("HEAD /log/checkpoint: %v %v", resp, err)
	}
}

func TestHandlerBeforeOpen(t *testing.T) {
	nd, err := New(Config{DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	nd.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/health", nil))
	if rec.Code != http.StatusServiceUnavailable {
		t.Fatalf("status %d before Open, want 503", rec.Code)
	}
}

func TestIssuer(t *testing.T) {
	tn := newTestNode(t, 0)
	_, body := tn.get(t, "/api/v1/issuer")
	var doc map[string]any
	if err := json.Unmarshal(body, &doc); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"did", "publicKeyHex", "name", "profile", "profileUrl", "warden", "patternSet", "recordSet", "logType", "source", "logOrigin", "logVkey", "witnessName", "witnessVkey"} {
		if _, ok := doc[k]; !ok {
			t.Errorf("issuer lacks %q", k)
		}
	}
	pub, err := awr.ParseDIDKey(doc["did"].(string))
	if err != nil {
		t.Fatal(err)
	}
	if hex.EncodeToString(pub) != doc["publicKeyHex"] || doc["did"] != tn.node.DID() {
		t.Errorf("publicKeyHex %v does not match did %v", doc["publicKeyHex"], doc["did"])
	}
	if doc["logOrigin"] != "test.example/log" || !strings.HasPrefix(doc["logVkey"].(string), "test.example/log+") ||
		!strings.HasPrefix(doc["witnessVkey"].(string), "test.example/witness+") {
		t.Errorf("issuer names: %s", body)
	}
}

func TestHealthAndHeads(t *testing.T) {
	tn := newTestNode(t, 3)
	_, body := tn.get(t, "/health")
	var h struct {
		OK       bool   `json:"ok"`
		Service  string `json:"service"`
		TreeSize uint64 `json:"tree_size"`
	}
	if err := json.Unmarshal(body, &h); err != nil || !h.OK || h.Service != "histor" || h.TreeSize != 3 {
		t.Fatalf("health %s: %v", body, err)
	}
	pub := tn.node.id.logKey.Public().(ed25519.PublicKey)
	for _, path := range []string{"/api/v1/log/sth", "/api/v1/log/sth/3"} {
		_, body := tn.get(t, path)
		sth, err := format.VerifySTH(body, pub)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if want := strings.TrimPrefix(path, "/api/v1/log/sth/"); want != path && fmt.Sprint(sth.TreeSize) != want {
			t.Errorf("%s: treeSize %d", path, sth.TreeSize)
		}
	}
}

// TestCheckpointOfAnEmptyLog: the C2SP checkpoint of size 0 is served for
// witnesses before the first label, while the JSON heads answer 404
// (node/logapi).
func TestCheckpointOfAnEmptyLog(t *testing.T) {
	tn := newTestNode(t, 0)
	if resp, body := tn.get(t, "/log/checkpoint"); resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "\n0\n") {
		t.Errorf("checkpoint of an empty log: %d %q", resp.StatusCode, body)
	}
	if resp, _ := tn.get(t, "/api/v1/log/sth"); resp.StatusCode != http.StatusNotFound {
		t.Errorf("head of an empty log: %d", resp.StatusCode)
	}
}
