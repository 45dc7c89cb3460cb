package mcpclient

import (
	"bytes"
	"errors"
	"io"
)

// sseEvent is one dispatched server-sent event.
type sseEvent struct {
	name string // "" means the default, "message"
	data []byte
}

// sseReader splits an event stream into events. Lines end at CR, LF or CRLF,
// found as bytes (U+2028 and friends are ordinary characters inside JSON);
// one event and the whole stream are bounded.
type sseReader struct {
	r        io.Reader
	buf      []byte // unread bytes, a suffix of store
	store    []byte
	chunk    []byte
	eof      bool
	over     bool  // r yielded a byte past the budget, which was dropped
	skipLF   bool  // the last line ended in CR; a following LF belongs to it
	total    int64 // bytes taken from r, at most budget
	budget   int64 // most bytes r may yield
	maxEvent int
	what     string
}

func newSSEReader(r io.Reader, budget int64, maxEvent int, what string) *sseReader {
	return &sseReader{r: r, chunk: make([]byte, 32<<10), budget: budget, maxEvent: maxEvent, what: what}
}

// next returns the next event with data, or io.EOF when the stream ends.
func (s *sseReader) next() (sseEvent, error) {
	var ev sseEvent
	var data [][]byte
	size := 0
	for {
		line, err := s.line()
		if errors.Is(err, io.EOF) && len(data) > 0 {
			ev.data = bytes.Join(data, []byte{'\n'})
			return ev, nil
		}
		if err != nil {
			return sseEvent{}, err
		}
		if len(line) == 0 {
			if len(data) > 0 {
				ev.data = bytes.Join(data, []byte{'\n'})
				return ev, nil
			}
			ev, size = sseEvent{}, 0
			continue
		}
		if size += len(line); size > s.maxEvent {
			return sseEvent{}, stopf(StatusTooLarge, "an event in the %s exceeded %d bytes", s.what, s.maxEvent)
		}
		field, value := splitField(line)
		switch field {
		case "data":
			data = append(data, value)
		case "event":
			ev.name = string(value)
		}
	}
}

func splitField(line []byte) (string, []byte) {
	i := bytes.IndexByte(line, ':')
	if i < 0 {
		return string(line), nil
	}
	value := line[i+1:]
	if len(value) > 0 && value[0] == ' ' {
		value = value[1:]
	}
	return string(line[:i]), value
}

// line returns the next line without its terminator. The returned slice is
// copied, so it stays valid across calls.
func (s *sseReader) line() ([]byte, error) {
	for {
		if s.skipLF && len(s.buf) > 0 {
			if s.buf[0] == '\n' {
				s.buf = s.buf[1:]
			}
			s.skipLF = false
		}
		if i := bytes.IndexAny(s.buf, "\r\n"); i >= 0 {
			line := bytes.Clone(s.buf[:i])
			s.skipLF = s.buf[i] == '\r'
			s.buf = s.buf[i+1:]
			return line, nil
		}
		if len(s.buf) > s.maxEvent {
			return nil, stopf(StatusTooLarge, "a line in the %s exceeded %d bytes", s.what, s.maxEvent)
		}
		if s.over {
			return nil, stopf(StatusTooLarge, "%s exceeded %d bytes", s.what, s.budget)
		}
		if s.eof {
			if len(s.buf) > 0 {
				line := bytes.Clone(s.buf)
				s.buf = nil
				return line, nil
			}
			return nil, io.EOF
		}
		if err := s.fill(); err != nil {
			return nil, err
		}
	}
}

// fill reads at most one byte past the budget. That byte is dropped and
// marks the stream over its budget, so the events that fit are handed out
// and the error comes when a line needs more, however the reads fall.
func (s *sseReader) fill() error {
	chunk := s.chunk[:min(int64(len(s.chunk)), s.budget-s.total+1)]
	n, err := s.r.Read(chunk)
	if s.total+int64(n) > s.budget {
		n, s.over = int(s.budget-s.total), true
	}
	s.total += int64(n)
	// Unread bytes move to the front of one reused buffer (lines handed out
	// are copies), so a long stream of small events holds at most one line.
	s.store = append(append(s.store[:0], s.buf...), s.chunk[:n]...)
	s.buf = s.store
	if errors.Is(err, io.EOF) {
		s.eof = true
		return nil
	}
	if err != nil {
		return readErr(err)
	}
	return nil
}
