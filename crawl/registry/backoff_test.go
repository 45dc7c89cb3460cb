package registry_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/histor-observer/histor/crawl/registry"
)

// scripted answers each request with the next of its statuses (the last
// repeats), in memory, and records when each came on the bubble's clock.
type scripted struct {
	statuses   []int
	retryAfter string
	start      time.Time
	at         []time.Duration
}

func (s *scripted) RoundTrip(r *http.Request) (*http.Response, error) {
	s.at = append(s.at, time.Since(s.start))
	code := s.statuses[min(len(s.at), len(s.statuses))-1]
	body := `{"servers":[],"metadata":{}}`
	h := http.Header{"Content-Type": {"application/json"}}
	if code != http.StatusOK {
		body = "busy"
		if s.retryAfter != "" {
			h.Set("Retry-After", s.retryAfter)
		}
	}
	return &http.Response{StatusCode: code, Header: h, Body: io.NopCloser(strings.NewReader(body)), Request: r}, nil
}

// TestRetryBackoff runs the harvest's retries on synctest's clock: the
// pauses double from RetryDelay up to MaxRetryDelay, Retry-After replaces
// them (still capped), and a deadline ends the wait. The times are exact
// because no real time passes.
func TestRetryBackoff(t *testing.T) {
	s := time.Second
	for _, tc := range []struct {
		name       string
		statuses   []int
		retryAfter string
		deadline   time.Duration
		want       []time.Duration // when each request came
		err        bool
	}{
		{"doubling, capped", []int{503, 503, 503, 503, 200}, "", 0, []time.Duration{0, 1 * s, 3 * s, 6 * s, 9 * s}, false},
		{"gives up after the attempts", []int{500}, "", 0, []time.Duration{0, 1 * s, 3 * s, 6 * s, 9 * s}, true},
		{"Retry-After, capped", []int{429, 200}, "2", 0, []time.Duration{0, 2 * s}, false},
		{"Retry-After over the cap", []int{429, 200}, "3600", 0, []time.Duration{0, 3 * s}, false},
		{"deadline while waiting", []int{503}, "", 2 * s, []time.Duration{0, 1 * s}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rt := &scripted{statuses: tc.statuses, retryAfter: tc.retryAfter, start: time.Now()}
				ctx := context.Background()
				if tc.deadline > 0 {
					var cancel context.CancelFunc
					ctx, cancel = context.WithTimeout(ctx, tc.deadline)
					defer cancel()
				}
				opts := registry.Options{RetryDelay: s, MaxRetryDelay: 3 * s}
				res, err := registry.Harvest(ctx, &http.Client{Transport: rt}, "https://registry.example", opts)
				if (err != nil) != tc.err || !tc.err && !res.Complete {
					t.Fatalf("harvest: %+v, %v; want an error: %v", res, err, tc.err)
				}
				if tc.deadline > 0 && !errors.Is(err, context.DeadlineExceeded) {
					t.Errorf("err = %v, want the deadline", err)
				}
				if !slices.Equal(rt.at, tc.want) {
					t.Errorf("requests at %v, want %v", rt.at, tc.want)
				}
			})
		})
	}
}
