package httpx

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestRouterMatchesTheMostLiteralPattern(t *testing.T) {
	rt := NewRouter([]Route{
		{Pattern: "/", Methods: GetOnly},
		{Pattern: "/t/{L}/{N...}", Methods: GetOnly},
		{Pattern: "/t/entries/{N...}", Methods: GetOnly},
		{Pattern: "/b/{id}.svg", Methods: GetOnly},
		{Pattern: "/x/{id}", Methods: []string{http.MethodPost}},
		{Pattern: "/x/{id}", Methods: []string{http.MethodOptions}},
	})
	for _, c := range []struct{ path, pattern, vars string }{
		{"/", "/", ""},
		{"/t/entries/x001/2", "/t/entries/{N...}", "N=x001/2"},
		{"/t/0/x001/2.p/5", "/t/{L}/{N...}", "L=0 N=x001/2.p/5"},
		{"/b/abc.svg", "/b/{id}.svg", "id=abc"},
		{"/b/.svg", "", ""},
		{"/b/abc", "", ""},
		{"/x/7", "/x/{id}", "id=7"},
		{"/x/7/", "", ""},
		{"//", "", ""},
	} {
		r := httptest.NewRequest("GET", "/", nil)
		r.URL.Path = c.path
		m := rt.Lookup(r)
		got := ""
		if m != nil {
			got = m.Pattern
		}
		if got != c.pattern {
			t.Errorf("%s matched %q, want %q", c.path, got, c.pattern)
			continue
		}
		for _, kv := range strings.Fields(c.vars) {
			k, v, _ := strings.Cut(kv, "=")
			if r.PathValue(k) != v {
				t.Errorf("%s: %s = %q, want %q", c.path, k, r.PathValue(k), v)
			}
		}
	}
	r := httptest.NewRequest("GET", "/x/7", nil)
	if h, allow := rt.Lookup(r).Handler(http.MethodGet); h != nil || allow != "POST, OPTIONS" {
		t.Errorf("GET /x/7: handler %v, Allow %q", h, allow)
	}
	if _, allow := rt.Lookup(httptest.NewRequest("GET", "/", nil)).Handler(http.MethodHead); allow != "" {
		t.Errorf("HEAD / is not answered by GET's handler: Allow %q", allow)
	}
}

func TestRouterRefusesABrokenTable(t *testing.T) {
	for _, table := range [][]Route{
		{{Pattern: "/a", Methods: GetOnly}, {Pattern: "/a", Methods: GetOnly}},
		{{Pattern: "a", Methods: GetOnly}},
		{{Pattern: "/{a...}/b", Methods: GetOnly}},
		{{Pattern: "/{}", Methods: GetOnly}},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("NewRouter(%v) did not panic", table)
				}
			}()
			NewRouter(table)
		}()
	}
}

func TestRoutesListsWithoutHandlers(t *testing.T) {
	h := http.NotFoundHandler()
	rt := NewRouter([]Route{{Pattern: "/a", Methods: GetOnly, Handler: h, Unbounded: true}})
	list := rt.Routes()
	if len(list) != 1 || list[0].Handler != nil || !list[0].Unbounded {
		t.Fatalf("Routes() = %+v", list)
	}
	list[0].Methods[0] = "DELETE"
	if rt.Routes()[0].Methods[0] != http.MethodGet {
		t.Fatal("Routes handed out the table's own method list")
	}
}

func TestStatusWriterAndDetail(t *testing.T) {
	rec := httptest.NewRecorder()
	sw := &StatusWriter{ResponseWriter: rec}
	if sw.Status() != http.StatusOK {
		t.Fatalf("a handler that wrote nothing: %d", sw.Status())
	}
	WriteDetail(sw, http.StatusTeapot, "short and stout")
	if sw.Status() != http.StatusTeapot || rec.Body.String() != `{"detail":"short and stout"}` || rec.Header().Get("Cache-Control") != "no-store" {
		t.Fatalf("%d %q %v", sw.Status(), rec.Body.String(), rec.Header())
	}
}

func TestReadJSONObject(t *testing.T) {
	for _, c := range []struct {
		body   string
		status int
	}{
		{"", 0}, {`{"a":1}`, 0}, {`[1]`, http.StatusBadRequest}, {`{`, http.StatusBadRequest},
		{`{"a":"` + strings.Repeat("x", 64) + `"}`, http.StatusRequestEntityTooLarge},
	} {
		r := httptest.NewRequest("POST", "/", strings.NewReader(c.body))
		obj, status, detail := ReadJSONObject(httptest.NewRecorder(), r, 32)
		if status != c.status || (status == 0) != (obj != nil) || (status == 0) == (detail != "") {
			t.Errorf("%q: %v %d %q", c.body, obj, status, detail)
		}
	}
	r := httptest.NewRequest("POST", "/", strings.NewReader("{}"))
	r.ContentLength = 1 << 20 // declared too large: refused before reading
	if _, status, _ := ReadBody(httptest.NewRecorder(), r, 32); status != http.StatusRequestEntityTooLarge {
		t.Errorf("a declared length over the bound: %d", status)
	}
	if RetryAfter(0) != "1" || RetryAfter(1500*time.Millisecond) != "2" || RetryAfter(time.Minute) != "60" {
		t.Errorf("RetryAfter: %s %s %s", RetryAfter(0), RetryAfter(1500*time.Millisecond), RetryAfter(time.Minute))
	}
}
