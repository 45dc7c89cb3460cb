package mcpclient

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// cpuTime is the process's user+system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// runCPU runs f b.N times and reports process CPU per op beside wall time.
// Server and client share the process, so the figure includes the server.
func runCPU(b *testing.B, f func()) {
	b.ReportAllocs()
	b.ResetTimer()
	start := cpuTime()
	for b.Loop() {
		f()
	}
	b.ReportMetric(float64((cpuTime()-start).Microseconds())/float64(b.N), "cpu-µs/op")
}

// BenchmarkObserveLoopback: one legacy observation (server/discover declined,
// initialize, notifications/initialized, tools/list, DELETE) against the Go
// SDK's stateful streamable handler and against a minimal hand-written
// server, beside a bare HTTP POST round trip: the client's cost per
// observation is the difference to the baseline, per request sent.
func BenchmarkObserveLoopback(b *testing.B) {
	s := sdkServer()
	sdk := serveB(b, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s },
		&mcp.StreamableHTTPOptions{JSONResponse: true}))
	fk := serveB(b, &fake{tools: manyTools(3), session: "bench"})
	c := testClient(Config{HTTP: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}})
	for _, tc := range []struct{ name, url string }{{"sdk-legacy", sdk}, {"fake-legacy", fk}} {
		b.Run(tc.name, func(b *testing.B) {
			runCPU(b, func() {
				if obs := c.Observe(context.Background(), tc.url, StreamableHTTP); obs.Status != StatusOK {
					b.Fatalf("status %s (%s)", obs.Status, obs.Detail)
				}
			})
		})
	}
	bare := serveB(b, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"jsonrpc":"2.0","id":1,"result":{}}`))
	}))
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	body := request(1, methodToolsList, map[string]any{})
	b.Run("baseline-post", func(b *testing.B) {
		runCPU(b, func() {
			resp, err := hc.Post(bare, "application/json", bytes.NewReader(body))
			if err != nil {
				b.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		})
	})
}

func serveB(b *testing.B, h http.Handler) string {
	srv := httptest.NewServer(h)
	b.Cleanup(srv.Close)
	return srv.URL
}
