package mcpclient

import (
	"bytes"
	"compress/flate"
	"compress/zlib"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestLegacySessionEchoAndDelete: the session id and negotiated version are
// echoed on tools/list, and the session is deleted at the end (405 ignored).
func TestLegacySessionEchoAndDelete(t *testing.T) {
	f := &fake{tools: manyTools(2), session: "sess-1~ok"}
	obs := observe(t, testClient(Config{}), serve(t, f).URL, StreamableHTTP)
	if obs.Status != StatusOK || obs.Era != EraLegacyStreamable || len(obs.Tools) != 2 {
		t.Fatalf("status %s (%s), era %s, %d tools", obs.Status, obs.Detail, obs.Era, len(obs.Tools))
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.seenSession != "sess-1~ok" || f.seenVersion != "2025-06-18" {
		t.Errorf("tools/list carried session %q version %q", f.seenSession, f.seenVersion)
	}
	if f.deleted != 1 {
		t.Errorf("%d DELETEs of the session, want 1", f.deleted)
	}
}

// TestBadSessionID: a session id that is not visible ASCII (≤256) is never
// echoed; the observation ends in protocol.
func TestBadSessionID(t *testing.T) {
	for _, id := range []string{"has space", strings.Repeat("a", 257)} {
		f := &fake{tools: manyTools(1), session: id}
		obs := observe(t, testClient(Config{}), serve(t, f).URL, StreamableHTTP)
		if obs.Status != StatusProtocol {
			t.Errorf("session %.20q: status %s, want protocol", id, obs.Status)
		}
	}
}

// TestSSEReplies: an event-stream reply with a priming event, a comment, a
// server request and a notification before the response, lines ending in
// CR only, and U+2028 inside the JSON, is read to the matching response.
func TestSSEReplies(t *testing.T) {
	tools := func(w http.ResponseWriter, id int64, _ string) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "id: prime\rdata:\r\r: a comment\r")
		fmt.Fprint(w, "event: message\rdata: {\"jsonrpc\":\"2.0\",\"id\":99,\"method\":\"roots/list\"}\r\r")
		fmt.Fprint(w, "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}\r\n\r\n")
		fmt.Fprint(w, "data: not json at all\n\n")
		fmt.Fprintf(w, "data: {\"jsonrpc\":\"2.0\",\"id\":%d,\r", id)
		fmt.Fprint(w, "data: \"result\":{\"tools\":[{\"name\":\"a\",\"description\":\"x\u2028y\",\"inputSchema\":{}}]}}\r\r")
	}
	obs := observe(t, testClient(Config{}), serve(t, &fake{tools: tools}).URL, StreamableHTTP)
	if obs.Status != StatusOK || len(obs.Tools) != 1 {
		t.Fatalf("status %s (%s), %d tools", obs.Status, obs.Detail, len(obs.Tools))
	}
	if d := obs.Tools[0].(map[string]any)["description"]; d != "x\u2028y" {
		t.Errorf("description %q", d)
	}
}

// TestSSEEventBound: one event larger than MaxSSEEventBytes is too-large.
func TestSSEEventBound(t *testing.T) {
	tools := func(w http.ResponseWriter, id int64, _ string) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "data: {\"jsonrpc\":\"2.0\",\"id\":%d,\"result\":{\"tools\":[],\"pad\":\"%s\"}}\n\n", id, strings.Repeat("x", 2048))
	}
	obs := observe(t, testClient(Config{MaxSSEEventBytes: 1024}), serve(t, &fake{tools: tools}).URL, StreamableHTTP)
	if obs.Status != StatusTooLarge {
		t.Fatalf("status %s (%s), want too-large", obs.Status, obs.Detail)
	}
}

// TestContentCodings: gzip, zlib-wrapped deflate and raw deflate decode;
// an unknown coding is refused.
func TestContentCodings(t *testing.T) {
	body := func(id int64) []byte {
		return fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%d,"result":{"tools":[{"name":"z","inputSchema":{}}]}}`, id)
	}
	cases := map[string]struct {
		enc    string
		encode func([]byte) []byte
		want   string
	}{
		"gzip":        {"gzip", gzipBytes, StatusOK},
		"zlib":        {"deflate", zlibBytes, StatusOK},
		"raw-deflate": {"deflate", rawDeflate, StatusOK},
		"br":          {"br", func(b []byte) []byte { return b }, StatusProtocol},
		"corrupt":     {"gzip", func(b []byte) []byte { g := gzipBytes(b); g[len(g)/2] ^= 0xff; return g }, StatusProtocol},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			tools := func(w http.ResponseWriter, id int64, _ string) {
				w.Header().Set("Content-Type", "application/json")
				w.Header().Set("Content-Encoding", tc.enc)
				w.Write(tc.encode(body(id)))
			}
			obs := observe(t, testClient(Config{}), serve(t, &fake{tools: tools}).URL, StreamableHTTP)
			if obs.Status != tc.want {
				t.Fatalf("status %s (%s), want %s", obs.Status, obs.Detail, tc.want)
			}
		})
	}
}

func zlibBytes(b []byte) []byte {
	var buf bytes.Buffer
	zw := zlib.NewWriter(&buf)
	zw.Write(b)
	zw.Close()
	return buf.Bytes()
}

func rawDeflate(b []byte) []byte {
	var buf bytes.Buffer
	zw, _ := flate.NewWriter(&buf, flate.DefaultCompression)
	zw.Write(b)
	zw.Close()
	return buf.Bytes()
}

// TestBatchReply: a JSON-RPC batch holding the response is accepted.
func TestBatchReply(t *testing.T) {
	tools := func(w http.ResponseWriter, id int64, _ string) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `[{"jsonrpc":"2.0","method":"notifications/x"},{"jsonrpc":"2.0","id":%d,"result":{"tools":[{"name":"b","inputSchema":{}}]}}]`, id)
	}
	obs := observe(t, testClient(Config{}), serve(t, &fake{tools: tools}).URL, StreamableHTTP)
	if obs.Status != StatusOK || len(obs.Tools) != 1 {
		t.Fatalf("status %s (%s)", obs.Status, obs.Detail)
	}
}

// modernServer speaks only the modern protocol, at the versions it lists.
type modernServer struct {
	supported []string
}

func (m *modernServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var in struct {
		ID     int64  `json:"id"`
		Method string `json:"method"`
		Params struct {
			Meta map[string]any `json:"_meta"`
		} `json:"params"`
	}
	json.NewDecoder(r.Body).Decode(&in)
	v := r.Header.Get("MCP-Protocol-Version")
	w.Header().Set("Content-Type", "application/json")
	if in.Params.Meta[metaProtocolVersion] != v || r.Header.Get("Mcp-Method") != in.Method {
		w.WriteHeader(400)
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%d,"error":{"code":-32020,"message":"header mismatch"}}`, in.ID)
		return
	}
	if !contains(m.supported, v) {
		w.WriteHeader(400)
		sup, _ := json.Marshal(m.supported)
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%d,"error":{"code":-32022,"message":"unsupported","data":{"supported":%s,"requested":%q}}}`, in.ID, sup, v)
		return
	}
	switch in.Method {
	case methodDiscover:
		sup, _ := json.Marshal(m.supported)
		writeResult(w, in.ID, fmt.Sprintf(`{"resultType":"complete","supportedVersions":%s,"capabilities":{"tools":{}},"instructions":"hi","ttlMs":1000,"cacheScope":"public","_meta":{%q:{"name":"modern","version":"9"}}}`, sup, metaServerInfo))
	case methodToolsList:
		writeResult(w, in.ID, toolsJSON("m", 2, ""))
	default:
		w.WriteHeader(404)
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%d,"error":{"code":-32601,"message":"no"}}`, in.ID)
	}
}

func contains(list []string, v string) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

// TestModernVersionRetry: a -32022 naming another modern version is retried
// with it; one naming only legacy versions sends the client to initialize.
func TestModernVersionRetry(t *testing.T) {
	var log methodLog
	obs := observe(t, testClient(Config{}), serve(t, log.wrap(&modernServer{supported: []string{"2027-01-01", "2025-06-18"}})).URL, StreamableHTTP)
	if obs.Status != StatusOK || obs.Era != EraModern || obs.ProtocolVersion != "2027-01-01" {
		t.Fatalf("status %s (%s), era %s, version %s", obs.Status, obs.Detail, obs.Era, obs.ProtocolVersion)
	}
	if obs.ServerInfo["name"] != "modern" || obs.Instructions == nil || *obs.Instructions != "hi" || len(obs.Tools) != 2 {
		t.Errorf("serverInfo %v, instructions %v, %d tools", obs.ServerInfo, obs.Instructions, len(obs.Tools))
	}
	assertReadOnly(t, &log)

	log = methodLog{}
	obs = observe(t, testClient(Config{}), serve(t, log.wrap(&modernServer{supported: []string{"2025-06-18"}})).URL, StreamableHTTP)
	// The legacy attempt then fails too (this server has no initialize), but
	// only after the fallback was taken.
	if got := log.list(); len(got) < 2 || got[len(got)-1] != methodInitialize {
		t.Errorf("methods %v, want server/discover then initialize", got)
	}
	if obs.Status == StatusOK {
		t.Errorf("status ok from a server that cannot list tools at our versions")
	}
}

type failingTransport struct{ err error }

func (f failingTransport) RoundTrip(*http.Request) (*http.Response, error) { return nil, f.err }

type blockedError struct{}

func (blockedError) Error() string { return "address is not global unicast" }

// TestClassifyHook: a transport error the hook recognises keeps the hook's
// status; others map to connect or network.
func TestClassifyHook(t *testing.T) {
	classify := func(err error) (string, bool) {
		if errors.As(err, new(blockedError)) {
			return "blocked-address", true
		}
		return "", false
	}
	c := testClient(Config{HTTP: &http.Client{Transport: failingTransport{blockedError{}}}, Classify: classify})
	if obs := observe(t, c, "https://example.invalid/mcp", StreamableHTTP); obs.Status != "blocked-address" {
		t.Errorf("status %s (%s), want blocked-address", obs.Status, obs.Detail)
	}
	c = testClient(Config{HTTP: &http.Client{Transport: failingTransport{io.ErrUnexpectedEOF}}, Classify: classify})
	if obs := observe(t, c, "https://example.invalid/mcp", StreamableHTTP); obs.Status != StatusNetwork {
		t.Errorf("status %s (%s), want network", obs.Status, obs.Detail)
	}
	srv := serve(t, http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	if obs := observe(t, testClient(Config{}), url, StreamableHTTP); obs.Status != StatusConnect {
		t.Errorf("closed port: status %s (%s), want connect", obs.Status, obs.Detail)
	}
}

// TestLegacyFallbackOnDiscoverErrors: a handshake-era server may refuse the
// unknown server/discover with any 4xx or 5xx; it is still observed through
// the legacy lifecycle, except when the refusal would stop that too.
func TestLegacyFallbackOnDiscoverErrors(t *testing.T) {
	for code, want := range map[int]string{
		400: StatusOK, 404: StatusOK, 405: StatusOK, 406: StatusOK, 415: StatusOK, 500: StatusOK, 502: StatusOK,
		401: "http-401", 403: "http-403", 429: "http-429",
	} {
		f := &fake{tools: manyTools(2), discoverStatus: code}
		obs := observe(t, testClient(Config{}), serve(t, f).URL, StreamableHTTP)
		if obs.Status != want || (want == StatusOK && obs.Era != EraLegacyStreamable) {
			t.Errorf("server/discover answered %d: status %s (%s), era %s; want %s", code, obs.Status, obs.Detail, obs.Era, want)
		}
	}
}
