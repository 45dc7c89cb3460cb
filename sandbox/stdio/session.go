package stdio

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
	"time"

	"github.com/histor-observer/histor/log/canon"
	"github.com/histor-observer/histor/sandbox"
)

// stop ends a session (or, during the calls, one call) with a status.
type stop struct {
	status sandbox.Status
	detail string
}

func (s *stop) Error() string { return string(s.status) + ": " + s.detail }

func stopf(st sandbox.Status, format string, args ...any) *stop {
	return &stop{status: st, detail: fmt.Sprintf(format, args...)}
}

// event is one message read from stdout, or why reading ended.
type event struct {
	msg map[string]any
	err error // a refused message (a *stop) or the end of the stream
}

// session is one conversation: a reader goroutine turning stdout into
// events, a writer goroutine writing queued messages to stdin (so a server
// that stops reading can block only that goroutine, never a deadline), and
// the request/response bookkeeping between them.
type session struct {
	ctx      context.Context
	cfg      Config
	events   chan event
	out      chan []byte
	done     chan struct{}
	read     atomic.Int64
	deadline time.Time // of the whole session
	lastID   int64
	ended    bool // the stream ended (EOF or a bound): nothing more will arrive
}

func newSession(ctx context.Context, cfg Config, run Run, started time.Time) *session {
	s := &session{
		ctx: ctx, cfg: cfg,
		events:   make(chan event),
		out:      make(chan []byte, 64),
		done:     make(chan struct{}),
		deadline: started.Add(cfg.SessionTimeout),
	}
	go s.readLoop(run.Stdout)
	go s.writeLoop(run.Stdin)
	return s
}

// close stops both goroutines as soon as their pending Read or Write
// returns (the caller ending the server makes them return).
func (s *session) close() {
	close(s.done)
	close(s.out)
}

func (s *session) readLoop(r io.Reader) {
	lr := newLineReader(r, s.cfg.MaxLineBytes, s.cfg.MaxOutputBytes)
	for {
		line, err := lr.next()
		s.read.Store(lr.total)
		var ev event
		switch {
		case err != nil:
			ev.err = err
		default:
			var skip bool
			ev.msg, skip, ev.err = s.parse(line)
			if skip {
				continue
			}
		}
		select {
		case s.events <- ev:
		case <-s.done:
			return
		}
		if err != nil {
			return
		}
	}
}

func (s *session) writeLoop(w io.Writer) {
	var failed bool
	for b := range s.out {
		if failed {
			continue // the server is gone; its stdout's end tells the rest
		}
		if _, err := w.Write(b); err != nil {
			failed = true
		}
	}
}

// parse reads one line as a JSON-RPC message. Lines that are not a JSON
// object (log output, binary noise, invalid UTF-8) are skipped; a JSON
// object canon refuses for a reason that changes its meaning (a duplicate
// member, too deep) is a protocol stop, as in crawl/mcpclient.
func (s *session) parse(line []byte) (map[string]any, bool, error) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 || line[0] != '{' {
		return nil, true, nil
	}
	v, err := canon.ParseDeferringNumbers(line, canon.Limits{MaxDepth: s.cfg.MaxJSONDepth, MaxBytes: len(line) + 1})
	if err != nil {
		var ce *canon.Error
		if errors.As(err, &ce) && (ce.Code == canon.CodeSyntax || ce.Code == canon.CodeUnicode) {
			return nil, true, nil
		}
		return nil, false, stopf(sandbox.StatusProtocol, "message refused: %v", err)
	}
	m, ok := v.(map[string]any)
	return m, !ok, nil
}

// send queues one message for stdin, waiting at most until the deadline.
func (s *session) send(m map[string]any, until time.Time) error {
	b, err := canon.Encode(m)
	if err != nil {
		return fmt.Errorf("encoding message: %w", err)
	}
	t := time.NewTimer(time.Until(until))
	defer t.Stop()
	select {
	case s.out <- append(b, '\n'):
		return nil
	case <-t.C:
		return stopf(sandbox.StatusTimeout, "server stopped reading its stdin")
	case <-s.ctx.Done():
		return s.ctxStop()
	}
}

// call sends a request and waits for its response until until (or the
// session deadline, if earlier), declining the server's own requests
// meanwhile. It returns the response message (result or error).
func (s *session) call(method string, params map[string]any, until time.Time) (map[string]any, error) {
	if s.ended {
		return nil, stopf(sandbox.StatusExited, "stdout already ended")
	}
	until = earliest(until, s.deadline)
	s.lastID++
	id := s.lastID
	if err := s.send(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params}, until); err != nil {
		return nil, err
	}
	wait := time.Until(until)
	t := time.NewTimer(wait)
	defer t.Stop()
	for {
		select {
		case ev := <-s.events:
			if ev.err != nil {
				return nil, s.streamStop(ev.err, method)
			}
			if r, ok := s.handle(ev.msg, id, until); ok {
				return r, nil
			}
		case <-t.C:
			return nil, stopf(sandbox.StatusTimeout, "no answer to %s within %s", method, wait.Round(time.Millisecond))
		case <-s.ctx.Done():
			return nil, s.ctxStop()
		}
	}
}

// handle returns msg if it is the response to id; a request from the server
// is declined, anything else (notifications, late answers) ignored.
func (s *session) handle(msg map[string]any, id int64, until time.Time) (map[string]any, bool) {
	_, hasResult := msg["result"]
	_, hasError := msg["error"]
	got, isOurs := msg["id"].(int64)
	if isOurs && got == id && (hasResult || hasError) {
		return msg, true
	}
	method, isRequest := msg["method"].(string)
	if rid, hasID := msg["id"]; isRequest && hasID && rid != nil {
		_ = s.send(decline(rid, method), until) // a full stdin surfaces as the call's own timeout
	}
	return nil, false
}

// decline answers a server's request without doing anything: roots/list
// gets no roots, everything else method-not-found.
func decline(id any, method string) map[string]any {
	m := map[string]any{"jsonrpc": "2.0", "id": id}
	if method == "roots/list" {
		m["result"] = map[string]any{"roots": []any{}}
	} else {
		m["error"] = map[string]any{"code": int64(-32601), "message": "not supported by the observer"}
	}
	return m
}

// streamStop names the end of the stream; after it nothing more arrives.
func (s *session) streamStop(err error, method string) error {
	var st *stop
	if errors.As(err, &st) {
		return st // a refused message; the stream goes on
	}
	s.ended = true
	var le *LimitError
	switch {
	case errors.As(err, &le):
		return stopf(sandbox.StatusTooLarge, "%s", le.Error())
	case errors.Is(err, io.EOF):
		return stopf(sandbox.StatusExited, "stdout ended before the answer to %s", method)
	default:
		return stopf(sandbox.StatusExited, "reading stdout before the answer to %s: %v", method, err)
	}
}

func (s *session) ctxStop() error {
	if errors.Is(s.ctx.Err(), context.DeadlineExceeded) {
		return stopf(sandbox.StatusTimeout, "the caller's deadline passed")
	}
	return stopf(sandbox.StatusInspectionFailed, "cancelled by the caller: %v", s.ctx.Err())
}

func earliest(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}
