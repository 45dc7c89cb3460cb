package node

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/histor-observer/histor/crawl/scan"
	"github.com/histor-observer/histor/internal/httpx"
	hlog "github.com/histor-observer/histor/log"
)

// TestRouteTable: every pattern parses, no method is listed twice for one
// pattern (httpx.NewRouter would panic), every evidence kind has a route, and
// Routes lists the table, a mounted part's routes in its entry's place,
// without letting callers change it.
func TestRouteTable(t *testing.T) {
	routes := Routes()
	entries := 0
	for _, e := range routeTable {
		switch {
		case e.mount == nil:
			entries++
		case e.Pattern != "" || e.Methods != nil || e.serve != nil || e.unbounded:
			t.Errorf("a mount entry sets more than mount: %+v", e)
		default:
			entries += len(e.mount(&api{}))
		}
	}
	if len(routes) != entries {
		t.Fatalf("Routes lists %d of %d entries", len(routes), entries)
	}
	have := map[string]bool{}
	for _, rt := range routes {
		if len(rt.Methods) == 0 {
			t.Errorf("%s lists no method", rt.Pattern)
		}
		have[rt.Pattern] = true
	}
	for _, kind := range hlog.EvidenceKinds() {
		if !have["/api/v1/"+kind+"/{digest...}"] {
			t.Errorf("evidence kind %s has no route", kind)
		}
	}
	routes[0].Methods[0] = "DELETE"
	if routeTable[0].Methods[0] == "DELETE" {
		t.Error("Routes handed out the table's own method list")
	}
}

func TestRouteMatching(t *testing.T) {
	cases := []struct {
		path, pattern string
		values        map[string]string
	}{
		{"/log/tile/entries/x001/234", "/log/tile/entries/{N...}", map[string]string{"N": "x001/234"}},
		{"/log/tile/0/x001/234.p/5", "/log/tile/{L}/{N...}", map[string]string{"L": "0", "N": "x001/234.p/5"}},
		{"/api/v1/toolsets/sha256-a//b+c=", "/api/v1/toolsets/{digest...}", map[string]string{"digest": "sha256-a//b+c="}},
		{"/api/v1/toolsets/", "/api/v1/toolsets/{digest...}", map[string]string{"digest": ""}},
		{"/api/v1/labels/urn:uuid:1/proof", "/api/v1/labels/{label_id}/proof", map[string]string{"label_id": "urn:uuid:1"}},
		{"/api/v1/labels/", "", nil},
		{"/api/v1/labels/a/b/proof", "", nil},
		{"/api/v1/log/sth/", "", nil},
		{"/api/v1/issuer/", "", nil},
		{"/health/x", "", nil},
		{"//health", "", nil},
		{"/log/tile/0", "", nil},
	}
	router := httpx.NewRouter((&api{}).routes())
	for _, c := range cases {
		r := httptest.NewRequest("GET", "/", nil)
		r.URL.Path = c.path
		rt := router.Lookup(r)
		got := ""
		if rt != nil {
			got = rt.Pattern
		}
		if got != c.pattern {
			t.Errorf("%s routed to %q, want %q", c.path, got, c.pattern)
			continue
		}
		for k, v := range c.values {
			if r.PathValue(k) != v {
				t.Errorf("%s: %s = %q, want %q", c.path, k, r.PathValue(k), v)
			}
		}
	}
}

// TestWrongMethod: a wrong method is answered 405 with the route's own
// methods in Allow; a path no route has is 404 whatever the method.
func TestWrongMethod(t *testing.T) {
	tn := newTestNode(t, 1)
	for _, c := range []struct{ method, path, allow string }{
		{"GET", "/api/v1/admin/crawl", "POST"},
		{"POST", "/log/checkpoint", "GET, HEAD"},
		{"OPTIONS", "/api/v1/toolsets/x", "GET, HEAD"},
	} {
		req, _ := http.NewRequest(c.method, tn.srv.URL+c.path, nil)
		resp, err := tn.srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != c.allow {
			t.Errorf("%s %s: %d, Allow %q; want 405 and %q", c.method, c.path, resp.StatusCode, resp.Header.Get("Allow"), c.allow)
		}
	}
	req, _ := http.NewRequest("POST", tn.srv.URL+"/nowhere", nil)
	resp, err := tn.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("POST /nowhere: %d, want 404", resp.StatusCode)
	}
}

// TestIssuerNamesTheSets: /api/v1/issuer names the pattern and record sets
// the crawler uses, and the scanner that runs them, where HISTOR's has
// null until its first crawl.
func TestIssuerNamesTheSets(t *testing.T) {
	tn := newTestNode(t, 1)
	_, body := tn.get(t, "/api/v1/issuer")
	var doc map[string]any
	if err := json.Unmarshal(body, &doc); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"patternSet": scan.Default().Digest(),
		"recordSet":  scan.DefaultRecords().Digest(),
		"warden":     scannerPackage + "@" + Version,
		"profile":    "MTL/1",
	}
	for k, v := range want {
		if doc[k] != v {
			t.Errorf("issuer %s = %v, want %q", k, doc[k], v)
		}
	}
	if s, _ := doc["patternSet"].(string); !strings.HasPrefix(s, "sha256-") {
		t.Errorf("patternSet %q is not an SRI", s)
	}
}
