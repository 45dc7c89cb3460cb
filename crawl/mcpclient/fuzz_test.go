package mcpclient

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"testing"
	"testing/iotest"
)

// FuzzSSE: the event-stream splitter never panics, never hands out an event
// over its bound, never reads past its budget, and splits the same bytes the
// same way whatever the read sizes.
func FuzzSSE(f *testing.F) {
	f.Add([]byte("event: endpoint\ndata: /m?s=1\n\ndata: {}\r\n\r\n"))
	f.Add([]byte("data:a\rdata: b\r\r: c\n\nid\n\n"))
	f.Add([]byte("data: \xe2\x80\xa8\n\n"))
	// Events inside the budget are handed out however the bytes arrive,
	// even when one read brings the bytes past it.
	f.Add(append([]byte("data: a\n\n"), bytes.Repeat([]byte("data: b\n\n"), 100)...))
	f.Fuzz(func(t *testing.T, in []byte) {
		const maxEvent, budget = 64, 512
		whole := drain(newSSEReader(bytes.NewReader(in), budget, maxEvent, "fuzz"))
		bytewise := drain(newSSEReader(iotest.OneByteReader(bytes.NewReader(in)), budget, maxEvent, "fuzz"))
		if len(whole) != len(bytewise) {
			t.Fatalf("%d events read whole, %d byte by byte", len(whole), len(bytewise))
		}
		for i := range whole {
			if len(whole[i].data) > maxEvent {
				t.Fatalf("event of %d bytes passed a %d-byte bound", len(whole[i].data), maxEvent)
			}
			if whole[i].name != bytewise[i].name || !bytes.Equal(whole[i].data, bytewise[i].data) {
				t.Fatalf("event %d differs: %q vs %q", i, whole[i].data, bytewise[i].data)
			}
		}
	})
}

func drain(sr *sseReader) []sseEvent {
	var out []sseEvent
	for {
		ev, err := sr.next()
		if err != nil {
			return out
		}
		out = append(out, ev)
	}
}

// FuzzReadReply: any body, as JSON or as an event stream, either yields the
// response to our id or a StopError; never a panic or a foreign id.
func FuzzReadReply(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}`), false)
	f.Add([]byte("data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n"), true)
	f.Add([]byte(`[{"id":2,"result":{}},{"id":1,"error":{"code":-1}}]`), false)
	c := testClient(Config{MaxSSEEventBytes: 4096, MaxJSONDepth: 16})
	f.Fuzz(func(t *testing.T, body []byte, sse bool) {
		resp := &http.Response{StatusCode: 200, Header: http.Header{}, Body: io.NopCloser(bytes.NewReader(body))}
		resp.Header.Set("Content-Type", "application/json")
		if sse {
			resp.Header.Set("Content-Type", "text/event-stream")
		}
		r, err := c.readReply(resp, 1, 8192)
		if err != nil {
			var stop *StopError
			if !errors.As(err, &stop) {
				t.Fatalf("error %v is not a StopError", err)
			}
			return
		}
		if got, ok := matching(r.msg, 1); !ok || got == nil {
			t.Fatalf("reply %v does not answer id 1", r.msg)
		}
	})
}
