package guard

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestForget: every host a request reached stays pinned until Forget, and a
// request after Forget is checked and pinned again.
func TestForget(t *testing.T) {
	ok := http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})
	a, b := httptest.NewServer(ok), httptest.NewServer(ok)
	t.Cleanup(a.Close)
	t.Cleanup(b.Close)
	g := newGuard(t, Config{AllowPrivate: true})
	get := func(url string) {
		t.Helper()
		resp, err := g.Client().Get(url)
		if err != nil {
			t.Fatal(err)
		}
		drain(resp)
	}
	get(a.URL)
	get(b.URL)
	if n := g.Pinned(); n != 2 {
		t.Fatalf("%d pinned after two hosts, want 2", n)
	}
	g.Forget()
	if n := g.Pinned(); n != 0 {
		t.Fatalf("%d pinned after Forget", n)
	}
	g.Client().CloseIdleConnections()
	get(a.URL)
	if n := g.Pinned(); n != 1 {
		t.Fatalf("%d pinned after a request following Forget, want 1", n)
	}
}
