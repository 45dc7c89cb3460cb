package node

import (
	"encoding/json"
	"net/http/httptest"
	"testing"
	"time"
)

// stubCrawls is a crawlControl whose answers the test sets.
type stubCrawls struct {
	running bool
	lastErr *string
	since   time.Time
	starts  int
}

func (s *stubCrawls) status() (bool, *string) { return s.running, s.lastErr }

func (s *stubCrawls) start() (bool, time.Time) {
	if s.running {
		return false, s.since
	}
	s.starts++
	s.running = true
	return true, s.since
}

// TestHealthReportsCrawl: /health carries the crawl part's status as
// HISTOR's crawl_running and last_crawl_error, false and null without a
// crawler, and the profile.
func TestHealthReportsCrawl(t *testing.T) {
	msg := "harvesting registry: HTTP 503"
	cases := []struct {
		name   string
		crawls crawlControl
		want   string
	}{
		{"no crawler", nil, `{"crawl_running":false,"last_crawl_error":null,"profile":"dev"}`},
		{"running with an error", &stubCrawls{running: true, lastErr: &msg}, `{"crawl_running":true,"last_crawl_error":"harvesting registry: HTTP 503","profile":"dev"}`},
		{"idle after a good crawl", &stubCrawls{}, `{"crawl_running":false,"last_crawl_error":null,"profile":"dev"}`},
	}
	tn := newTestNode(t, 1)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := newAPI(tn.node.Log(), nil, tn.node.cfg)
			a.crawls = tc.crawls
			rec := httptest.NewRecorder()
			a.ServeHTTP(rec, httptest.NewRequest("GET", "/health", nil))
			var got struct {
				Running bool    `json:"crawl_running"`
				Err     *string `json:"last_crawl_error"`
				Profile string  `json:"profile"`
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
				t.Fatal(err)
			}
			b, _ := json.Marshal(map[string]any{"crawl_running": got.Running, "last_crawl_error": got.Err, "profile": got.Profile})
			if string(b) != tc.want {
				t.Errorf("health %s, want %s", b, tc.want)
			}
		})
	}
}
