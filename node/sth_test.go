package node

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	hlog "github.com/histor-observer/histor/log"
)

// steppingClock is a clock the test moves forward.
type steppingClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *steppingClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *steppingClock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// TestLatestSTHIsTheHeadOfItsSize: a head signed again at an unchanged
// size (as every crawl that appends nothing does) changes neither
// /api/v1/log/sth nor /api/v1/log/sth/<size>: both serve the first head
// signed at the size, and /api/v1/stats dates the same one.
func TestLatestSTHIsTheHeadOfItsSize(t *testing.T) {
	clock := &steppingClock{t: time.Date(2026, 9, 23, 9, 0, 0, 0, time.UTC)}
	nd, err := New(Config{DataDir: t.TempDir(), Now: clock.now})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := nd.Open(ctx); err != nil {
		t.Fatal(err)
	}
	defer nd.Close()
	get := func(path string) []byte {
		t.Helper()
		rec := httptest.NewRecorder()
		nd.Handler().ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		if rec.Code != http.StatusOK {
			t.Fatalf("%s: %d %s", path, rec.Code, rec.Body)
		}
		return rec.Body.Bytes()
	}
	for i := range 2 {
		if _, err := nd.Log().Append(ctx, []hlog.Entry{{ID: labelID(i), Label: makeLabel(i)}}, nil); err != nil {
			t.Fatal(err)
		}
	}
	first := get("/api/v1/log/sth/2")
	clock.advance(24 * time.Hour)
	newer, err := nd.Log().SignHead(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if newer.Size != 2 || string(newer.STH) == string(first) {
		t.Fatalf("the re-signed head is the same document (size %d): the test proves nothing", newer.Size)
	}
	if latest := get("/api/v1/log/sth"); string(latest) != string(first) {
		t.Errorf("/api/v1/log/sth serves\n%s\nbut /api/v1/log/sth/2 serves\n%s", latest, first)
	}
	var head struct{ Timestamp string }
	if err := json.Unmarshal(first, &head); err != nil {
		t.Fatal(err)
	}
	var stats struct {
		Log struct{ STHTimestamp string }
	}
	if err := json.Unmarshal(get("/api/v1/stats"), &stats); err != nil {
		t.Fatal(err)
	}
	if stats.Log.STHTimestamp != head.Timestamp {
		t.Errorf("stats date the head %s, /api/v1/log/sth %s", stats.Log.STHTimestamp, head.Timestamp)
	}
}
