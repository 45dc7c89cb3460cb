package mcpclient

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/histor-observer/histor/log/clip"
)

// TestDetailIsBounded: a detail that quotes what a hostile server sent (an
// event name, a Content-Encoding or Content-Type value) is clipped to
// MaxDetailBytes at a rune boundary, whatever the server sent.
func TestDetailIsBounded(t *testing.T) {
	long := strings.Repeat("é", 200<<10)
	cases := map[string]struct {
		h  http.Handler
		tr Transport
	}{
		"event name": {http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprintf(w, "event: %s\ndata: /message\n\n", long)
		}), SSE},
		"content-encoding": {http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			w.Header().Set("Content-Encoding", long[:100<<10])
			fmt.Fprint(w, "event: endpoint\ndata: /message\n\n")
		}), SSE},
		"content-type": {http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/"+strings.Repeat("x", 100<<10))
		}), SSE},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			obs := observe(t, testClient(Config{}), serve(t, tc.h).URL, tc.tr)
			if obs.Status != StatusProtocol {
				t.Fatalf("status %s (%.80s), want protocol", obs.Status, obs.Detail)
			}
			if len(obs.Detail) > MaxDetailBytes || !utf8.ValidString(obs.Detail) || !strings.HasSuffix(obs.Detail, clip.Mark) {
				t.Errorf("detail of %d bytes (valid UTF-8 %v), want at most %d ending in %q",
					len(obs.Detail), utf8.ValidString(obs.Detail), MaxDetailBytes, clip.Mark)
			}
		})
	}
}

func TestClipDetail(t *testing.T) {
	if s := ClipDetail("short"); s != "short" {
		t.Errorf("a short detail changed: %q", s)
	}
	for pad := range 4 {
		s := ClipDetail(strings.Repeat("x", pad) + strings.Repeat("€", MaxDetailBytes))
		if len(s) > MaxDetailBytes || !utf8.ValidString(s) {
			t.Errorf("pad %d: %d bytes, valid %v", pad, len(s), utf8.ValidString(s))
		}
	}
}

// TestStatusDetails: only a 401 reads as a request for credentials; a 403
// (also what a server answers a Host it refuses) says forbidden.
func TestStatusDetails(t *testing.T) {
	for code, want := range map[int]string{
		401: "not observed: the server requires authorisation",
		403: "not observed: forbidden (HTTP 403)",
		404: "",
		302: "redirect (HTTP 302) not followed",
	} {
		obs := observe(t, testClient(Config{}), serve(t, status(code)).URL, StreamableHTTP)
		if obs.Detail != want {
			t.Errorf("HTTP %d: status %s, detail %q; want %q", code, obs.Status, obs.Detail, want)
		}
	}
}
