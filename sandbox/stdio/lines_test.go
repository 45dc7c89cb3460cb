package stdio

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"testing/iotest"
)

// chunked returns data in reads of at most n bytes.
type chunked struct {
	data []byte
	n    int
}

func (c *chunked) Read(p []byte) (int, error) {
	if len(c.data) == 0 {
		return 0, io.EOF
	}
	k := min(len(p), c.n, len(c.data))
	copy(p, c.data[:k])
	c.data = c.data[k:]
	return k, nil
}

// readAll returns every line the reader gives and the error that ended it.
func readAll(r io.Reader, maxLine int, maxTotal int64) ([][]byte, error) {
	lr := newLineReader(r, maxLine, maxTotal)
	var lines [][]byte
	for {
		l, err := lr.next()
		if err != nil {
			return lines, err
		}
		lines = append(lines, bytes.Clone(l))
	}
}

func TestLineReader(t *testing.T) {
	cases := []struct {
		name     string
		in       string
		maxLine  int
		maxTotal int64
		lines    int
		limit    string // "", "line" or "output"
	}{
		{"lines", "a\nbb\n\nccc\n", 10, 100, 4, ""},
		{"last line without newline", "a\nbb", 10, 100, 2, ""},
		{"empty", "", 10, 100, 0, ""},
		{"line at the bound", "0123456789\n", 10, 100, 1, ""},
		{"line over the bound", "01234567890\n", 10, 100, 0, "line"},
		{"unterminated line over the bound", "01234567890", 10, 100, 0, "line"},
		{"output over the bound", "a\nb\nc\n", 10, 5, 2, "output"},
	}
	for _, tc := range cases {
		for _, r := range []io.Reader{bytes.NewReader([]byte(tc.in)), iotest.OneByteReader(bytes.NewReader([]byte(tc.in)))} {
			lines, err := readAll(r, tc.maxLine, tc.maxTotal)
			var le *LimitError
			switch {
			case tc.limit == "" && err != io.EOF:
				t.Errorf("%s: ended with %v, want EOF", tc.name, err)
			case tc.limit != "" && (!errors.As(err, &le) || le.What != tc.limit):
				t.Errorf("%s: ended with %v, want the %s bound", tc.name, err, tc.limit)
			}
			if tc.limit == "" && len(lines) != tc.lines {
				t.Errorf("%s: %d lines, want %d", tc.name, len(lines), tc.lines)
			}
		}
	}
}

// FuzzLineReader: the lines are exactly bytes.Split's, however the input is
// chunked, and no line or total bound is ever exceeded.
func FuzzLineReader(f *testing.F) {
	f.Add([]byte("a\nbb\n\nccc"), uint8(1), uint8(4))
	f.Add([]byte("{\"jsonrpc\":\"2.0\"}\n\n\n"), uint8(3), uint8(40))
	f.Add(bytes.Repeat([]byte("x"), 300), uint8(7), uint8(200))
	f.Fuzz(func(t *testing.T, data []byte, chunk, maxLine uint8) {
		n := int(chunk)%16 + 1
		lines, err := readAll(&chunked{data: data, n: n}, int(maxLine), 1<<20)
		want := bytes.Split(data, []byte("\n"))
		if len(want) > 0 && len(want[len(want)-1]) == 0 {
			want = want[:len(want)-1]
		}
		var le *LimitError
		if errors.As(err, &le) {
			for i, l := range lines {
				if !bytes.Equal(l, want[i]) || len(l) > int(maxLine) {
					t.Fatalf("line %d %q before the bound, want %q", i, l, want[i])
				}
			}
			if len(lines) >= len(want) || len(want[len(lines)]) <= int(maxLine) {
				t.Fatalf("bound hit after %d lines, but line %d fits", len(lines), len(lines))
			}
			return
		}
		if err != io.EOF {
			t.Fatalf("ended with %v", err)
		}
		if len(lines) != len(want) {
			t.Fatalf("%d lines, want %d", len(lines), len(want))
		}
		for i := range want {
			if !bytes.Equal(lines[i], want[i]) {
				t.Fatalf("line %d %q, want %q", i, lines[i], want[i])
			}
		}
	})
}
