package node

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// TestAdminCrawl: HISTOR's codes for POST /api/v1/admin/crawl — 503 with no
// token configured, 401 for a missing or wrong one, 202 when a crawl
// starts, 409 while one runs.
func TestAdminCrawl(t *testing.T) {
	tn := newTestNode(t, 1)
	since := time.Date(2026, 9, 23, 9, 0, 0, 0, time.UTC)
	cases := []struct {
		name, token, header string
		running             bool
		status              int
		body                string
	}{
		{"no token configured", "", "anything", false, 503, `{"detail":"operator token not configured"}`},
		{"missing token", "s3cret", "", false, 401, `{"detail":"operator token required"}`},
		{"shorter token", "s3cret", "s3cre", false, 401, `{"detail":"operator token required"}`},
		{"wrong token of the same length", "s3cret", "s3creT", false, 401, `{"detail":"operator token required"}`},
		{"longer token", "s3cret", "s3cret!", false, 401, `{"detail":"operator token required"}`},
		{"started", "s3cret", "s3cret", false, 202, `{"started":true,"runningSince":"2026-09-23T09:00:00Z"}`},
		{"already running", "s3cret", "s3cret", true, 409, `{"started":false,"runningSince":"2026-09-23T09:00:00Z"}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := tn.node.cfg
			cfg.OperatorToken = c.token
			a := newAPI(tn.node.Log(), nil, cfg)
			stub := &stubCrawls{running: c.running, since: since}
			a.crawls = stub
			req := httptest.NewRequest("POST", "/api/v1/admin/crawl", nil)
			if c.header != "" {
				req.Header.Set("X-Histor-Operator", c.header)
			}
			rec := httptest.NewRecorder()
			a.ServeHTTP(rec, req)
			if rec.Code != c.status || rec.Body.String() != c.body {
				t.Errorf("%d %s, want %d %s", rec.Code, rec.Body, c.status, c.body)
			}
			if wantStarts := map[bool]int{true: 1}[c.status == http.StatusAccepted]; stub.starts != wantStarts {
				t.Errorf("%d crawls started, want %d", stub.starts, wantStarts)
			}
		})
	}
}
