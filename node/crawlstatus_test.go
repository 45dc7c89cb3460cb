package node

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"testing"
)

// TestHealthReportsCrawl: /health carries Config.CrawlStatus as HISTOR's
// crawl_running and last_crawl_error, and null/false without a crawler.
func TestHealthReportsCrawl(t *testing.T) {
	running, lastErr := true, "harvesting registry: HTTP 503"
	cases := []struct {
		name   string
		status func() (bool, string)
		want   string
	}{
		{"no crawler", nil, `{"crawl_running":false,"last_crawl_error":null}`},
		{"running with an error", func() (bool, string) { return running, lastErr }, `{"crawl_running":true,"last_crawl_error":"harvesting registry: HTTP 503"}`},
		{"idle after a good crawl", func() (bool, string) { return false, "" }, `{"crawl_running":false,"last_crawl_error":null}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			nd, err := New(Config{DataDir: t.TempDir(), CrawlStatus: tc.status})
			if err != nil {
				t.Fatal(err)
			}
			if err := nd.Open(context.Background()); err != nil {
				t.Fatal(err)
			}
			defer nd.Close()
			rec := httptest.NewRecorder()
			nd.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/health", nil))
			var got struct {
				Running bool    `json:"crawl_running"`
				Err     *string `json:"last_crawl_error"`
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
				t.Fatal(err)
			}
			b, _ := json.Marshal(map[string]any{"crawl_running": got.Running, "last_crawl_error": got.Err})
			if string(b) != tc.want {
				t.Errorf("health %s, want %s", b, tc.want)
			}
		})
	}
}
