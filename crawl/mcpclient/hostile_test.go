package mcpclient

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"net/http"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/histor-observer/histor/log/mtl"
)

// hostile is one misbehaving server and what the client must make of it.
type hostile struct {
	name     string
	tools    func(w http.ResponseWriter, id int64, cursor string) // tools/list answer of a fake
	handler  http.Handler                                         // or a whole server
	tr       Transport
	cfg      Config
	want     []string // acceptable statuses
	maxAlloc uint64   // bytes the whole observation may allocate (default 48 MiB)
}

// A case whose status may be a timeout gets the short deadline; any other
// gets room, so a loaded machine cannot turn its status into a timeout.
const (
	testDeadline  = 2 * time.Second
	roomyDeadline = 20 * time.Second
	slack         = 1500 * time.Millisecond
)

// TestHostileServers drives each hostile server and checks that the
// observation ends in its status within the deadline, allocating far less
// than the attack's size, and that nothing but read-only methods was sent.
func TestHostileServers(t *testing.T) {
	for _, h := range hostileCases(t) {
		t.Run(h.name, func(t *testing.T) {
			var log methodLog
			handler := h.handler
			if handler == nil {
				handler = &fake{tools: h.tools}
			}
			srv := serve(t, log.wrap(handler))
			cfg := h.cfg
			if cfg.Deadline == 0 {
				cfg.Deadline = roomyDeadline
				if slices.Contains(h.want, StatusTimeout) {
					cfg.Deadline = testDeadline
				}
			}
			c := testClient(cfg)
			tr := h.tr
			if tr == "" {
				tr = StreamableHTTP
			}
			var obs *Observation
			var peak uint64
			alloc := allocated(func() { peak = peakHeap(func() { obs = observe(t, c, srv.URL, tr) }) })
			elapsed := obs.Ended.Sub(obs.Started)
			if !slices.Contains(h.want, obs.Status) {
				t.Errorf("status %s (%s), want one of %v", obs.Status, obs.Detail, h.want)
			}
			if obs.Status != StatusOK && obs.Tools != nil {
				t.Errorf("status %s kept %d tools", obs.Status, len(obs.Tools))
			}
			if elapsed > cfg.Deadline+slack {
				t.Errorf("took %s, deadline %s", elapsed, cfg.Deadline)
			}
			limit := h.maxAlloc
			if limit == 0 {
				limit = 48 << 20
			}
			if alloc > limit {
				t.Errorf("allocated %d MiB, bound %d MiB", alloc>>20, limit>>20)
			}
			if peak > 32<<20 {
				t.Errorf("live heap grew by %d MiB, bound 32 MiB", peak>>20)
			}
			if tr != SSE {
				assertReadOnly(t, &log)
			}
			t.Logf("%s: %s (%s) in %s, %d KiB allocated, live heap +%d KiB", h.name, obs.Status, obs.Detail,
				elapsed.Round(time.Millisecond), alloc>>10, peak>>10)
		})
	}
}

// allocated returns the bytes allocated (by every goroutine) while f ran.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// peakHeap returns how far the live heap rose above its start while f ran,
// sampled every millisecond.
func peakHeap(f func()) uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base, peak := ms.HeapAlloc, uint64(0)
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		var m runtime.MemStats
		for {
			select {
			case <-done:
				return
			case <-time.After(time.Millisecond):
			}
			runtime.ReadMemStats(&m)
			if m.HeapAlloc > base && m.HeapAlloc-base > peak {
				peak = m.HeapAlloc - base
			}
		}
	}()
	f()
	close(done)
	<-stopped
	return peak
}

func hostileCases(t *testing.T) []hostile {
	return []hostile{
		{name: "slow-drip", tools: slowDrip, want: []string{StatusTimeout}},
		{name: "endless-sse", tools: endlessSSE, want: []string{StatusTimeout, StatusTooLarge}, maxAlloc: 96 << 20},
		{name: "huge-body", tools: hugeBody(100 << 20), want: []string{StatusTooLarge}, cfg: Config{Deadline: 20 * time.Second}},
		{name: "endless-pagination", tools: freshCursors, want: []string{StatusPartial}, cfg: Config{Deadline: 20 * time.Second}},
		{name: "repeated-cursor", tools: repeatedCursor, want: []string{StatusPartial}},
		{name: "100000-tools", tools: manyTools(100000), want: []string{StatusTooLarge}, cfg: Config{Deadline: 20 * time.Second}},
		{name: "tool-count-bound", tools: manyTools(11), want: []string{StatusTooLarge}, cfg: Config{MaxTools: 10}},
		{name: "deep-json", tools: deepJSON(10000), want: []string{StatusProtocol}},
		{name: "duplicate-members", tools: verbatim(`{"tools":[{"name":"a","name":"b","inputSchema":{}}]}`), want: []string{StatusProtocol}},
		{name: "invalid-utf8", tools: verbatim("{\"tools\":[{\"name\":\"a\xff\",\"inputSchema\":{}}]}"), want: []string{StatusProtocol}},
		{name: "gzip-bomb", tools: gzipBomb(t), want: []string{StatusTooLarge}, cfg: Config{Deadline: 20 * time.Second}},
		{name: "stacked-gzip", tools: stackedGzip, want: []string{StatusProtocol}},
		{name: "http-401", handler: status(401), want: []string{"http-401"}},
		{name: "http-403", handler: status(403), want: []string{"http-403"}},
		{name: "http-302", handler: redirect(), want: []string{StatusRedirect}},
		{name: "sse-foreign-endpoint", handler: foreignEndpoint(), tr: SSE, want: []string{StatusProtocol}},
		{name: "sse-silent-stream", handler: legacySSE(false), tr: SSE, want: []string{StatusTimeout}},
		// Each flood event is parsed and dropped, so garbage grows with the
		// stream budget (7 MiB by default), never with the endless stream.
		{name: "sse-endless-stream", handler: legacySSE(true), tr: SSE, want: []string{StatusTimeout, StatusTooLarge}, maxAlloc: 96 << 20},
	}
}

func slowDrip(w http.ResponseWriter, id int64, _ string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(200)
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":{"tools":[]}}`, id)
	for i := range len(body) {
		if _, err := w.Write([]byte{body[i]}); err != nil {
			return
		}
		w.(http.Flusher).Flush()
		time.Sleep(time.Second)
	}
}

func endlessSSE(w http.ResponseWriter, _ int64, _ string) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(200)
	ev := []byte("event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"level\":\"info\",\"data\":\"tick\"}}\n\n")
	for {
		if _, err := w.Write(ev); err != nil {
			return
		}
	}
}

// hugeBody answers with n bytes: a valid start, then whitespace forever.
func hugeBody(n int) func(http.ResponseWriter, int64, string) {
	return func(w http.ResponseWriter, id int64, _ string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(200)
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%d,"result":{"tools":[`, id)
		pad := bytes.Repeat([]byte{' '}, 64<<10)
		for sent := 0; sent < n; sent += len(pad) {
			if _, err := w.Write(pad); err != nil {
				return
			}
		}
	}
}

func freshCursors(w http.ResponseWriter, id int64, cursor string) {
	writeResult(w, id, toolsJSON("t"+cursor+"-", 1, fmt.Sprintf("c%d", id)))
}

func repeatedCursor(w http.ResponseWriter, id int64, cursor string) {
	writeResult(w, id, toolsJSON("t"+cursor+"-", 1, "same"))
}

func manyTools(n int) func(http.ResponseWriter, int64, string) {
	body := toolsJSON("t", n, "")
	return func(w http.ResponseWriter, id int64, _ string) { writeResult(w, id, body) }
}

func deepJSON(depth int) func(http.ResponseWriter, int64, string) {
	schema := strings.Repeat(`{"a":`, depth) + "1" + strings.Repeat("}", depth)
	return verbatim(`{"tools":[{"name":"deep","inputSchema":` + schema + `}]}`)
}

func verbatim(result string) func(http.ResponseWriter, int64, string) {
	return func(w http.ResponseWriter, id int64, _ string) { writeResult(w, id, result) }
}

var (
	bombOnce sync.Once
	bomb     []byte
)

// gzipBomb answers with 1 GiB of zeros gzip-compressed to about 1 MiB
// (64 MiB under -short, to keep the fast path fast).
func gzipBomb(t *testing.T) func(http.ResponseWriter, int64, string) {
	size := 1 << 30
	if testing.Short() {
		size = 64 << 20
	}
	bombOnce.Do(func() { bomb = gzipZeros(size) })
	t.Logf("gzip bomb: %d MiB of zeros in %d KiB", size>>20, len(bomb)>>10)
	return func(w http.ResponseWriter, _ int64, _ string) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Encoding", "gzip")
		w.Write(bomb)
	}
}

func gzipZeros(n int) []byte {
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	zeros := make([]byte, 1<<20)
	for sent := 0; sent < n; sent += len(zeros) {
		zw.Write(zeros)
	}
	zw.Close()
	return buf.Bytes()
}

func stackedGzip(w http.ResponseWriter, id int64, _ string) {
	inner := gzipBytes([]byte(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":{"tools":[]}}`, id)))
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Encoding", "gzip, gzip")
	w.Write(gzipBytes(inner))
}

func gzipBytes(b []byte) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(b)
	zw.Close()
	return buf.Bytes()
}

func status(code int) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="mcp"`)
		w.WriteHeader(code)
	})
}

// redirect answers everything with 302 to a path that would answer, so
// following it would end in ok.
func redirect() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/real", &fake{tools: manyTools(1)})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/real", http.StatusFound)
	})
	return mux
}

// foreignEndpoint is a legacy SSE server whose endpoint event points at
// another origin.
func foreignEndpoint() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		fmt.Fprint(w, "event: endpoint\ndata: http://169.254.169.254/latest/meta-data?sessionId=1\n\n")
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	})
}

// TestNonIntegerNumbersKept: a schema number canon refuses does not stop the
// observation; it is kept so log/mtl reports MTL-NUM-001.
func TestNonIntegerNumbersKept(t *testing.T) {
	f := &fake{tools: verbatim(`{"tools":[{"name":"n","inputSchema":{"type":"object","properties":{"x":{"type":"number","maximum":2.5}}}}]}`)}
	obs := observe(t, testClient(Config{}), serve(t, f).URL, StreamableHTTP)
	if obs.Status != StatusOK {
		t.Fatalf("status %s (%s), want ok", obs.Status, obs.Detail)
	}
	_, err := mtl.Digest(obs.Tools)
	if code := mtl.Code(err); code != mtl.CodeNumber {
		t.Fatalf("digest refusal %q (%v), want %s", code, err, mtl.CodeNumber)
	}
}

// legacySSE is a legacy HTTP+SSE server that accepts every POST and then
// never answers on the stream: silent, or flooding it with notifications.
func legacySSE(flood bool) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /message", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusAccepted) })
	mux.HandleFunc("GET /", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "event: endpoint\ndata: /message?sessionId=1\n\n")
		w.(http.Flusher).Flush()
		ev := []byte("event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\"}\n\n")
		for flood {
			if _, err := w.Write(ev); err != nil {
				return
			}
		}
		<-r.Context().Done()
	})
	return mux
}
