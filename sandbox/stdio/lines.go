package stdio

import (
	"bytes"
	"fmt"
	"io"
)

// LimitError is a bound of Config the server's output went past.
type LimitError struct {
	What  string // "line" or "output"
	Limit int64
}

func (e *LimitError) Error() string {
	if e.What == "line" {
		return fmt.Sprintf("a stdout line longer than %d bytes", e.Limit)
	}
	return fmt.Sprintf("more than %d bytes on stdout", e.Limit)
}

const readChunk = 64 << 10

// lineReader splits a stream into newline-terminated lines without ever
// holding more than maxLine bytes of one line or reading more than maxTotal
// bytes in all. A last line without a newline is returned before io.EOF.
type lineReader struct {
	r        io.Reader
	buf      []byte // buf[start:] is read but not yet returned
	start    int
	scanned  int // buf[start:scanned] holds no newline: search only past it
	total    int64
	eof      bool
	maxLine  int
	maxTotal int64
}

func newLineReader(r io.Reader, maxLine int, maxTotal int64) *lineReader {
	return &lineReader{r: r, maxLine: maxLine, maxTotal: maxTotal}
}

// next returns the next line without its newline. The slice is valid until
// the next call.
func (l *lineReader) next() ([]byte, error) {
	for {
		rest := l.buf[l.start:]
		if j := bytes.IndexByte(l.buf[max(l.scanned, l.start):], '\n'); j >= 0 {
			i := max(l.scanned, l.start) - l.start + j
			if i > l.maxLine {
				return nil, &LimitError{What: "line", Limit: int64(l.maxLine)}
			}
			l.start += i + 1
			l.scanned = l.start
			return rest[:i], nil
		}
		l.scanned = len(l.buf)
		if len(rest) > l.maxLine {
			return nil, &LimitError{What: "line", Limit: int64(l.maxLine)}
		}
		if l.eof {
			l.buf, l.start, l.scanned = l.buf[:0], 0, 0
			if len(rest) > 0 {
				return rest, nil
			}
			return nil, io.EOF
		}
		if err := l.fill(); err != nil {
			return nil, err
		}
	}
}

// fill compacts the buffer and reads one chunk into it.
func (l *lineReader) fill() error {
	if l.start > 0 {
		k := copy(l.buf, l.buf[l.start:])
		l.scanned -= l.start
		l.buf, l.start = l.buf[:k], 0
	}
	n := len(l.buf)
	if cap(l.buf)-n < readChunk {
		grown := make([]byte, n, 2*cap(l.buf)+readChunk)
		copy(grown, l.buf)
		l.buf = grown
	}
	k, err := l.r.Read(l.buf[n : n+readChunk])
	l.buf = l.buf[:n+k]
	l.total += int64(k)
	if l.total > l.maxTotal {
		return &LimitError{What: "output", Limit: l.maxTotal}
	}
	if err == io.EOF {
		l.eof = true
		return nil
	}
	return err
}
