package clip

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestCut(t *testing.T) {
	euros := strings.Repeat("€", 100) // 3 bytes each
	for _, tc := range []struct {
		s    string
		max  int
		want string
		cut  bool
	}{
		{"short", 200, "short", false},
		{"exact", 5, "exact", false},
		{"toolong", 6, "too" + Mark, true},
		{euros, 10, "€€" + Mark, true},        // 7 bytes left: two whole euros
		{"x" + euros, 10, "x€€" + Mark, true}, // 7 bytes left: x and two euros
		{"xx" + euros, 10, "xx€" + Mark, true},
		{"abcdef", 2, Mark, true}, // no room for any text beside the mark
		{"", 0, "", false},
	} {
		got, cut := Cut(tc.s, tc.max)
		if got != tc.want || cut != tc.cut {
			t.Errorf("Cut(%.12q, %d) = %q, %v; want %q, %v", tc.s, tc.max, got, cut, tc.want, tc.cut)
		}
		if tc.max >= len(Mark) && len(got) > tc.max {
			t.Errorf("Cut(%.12q, %d) is %d bytes", tc.s, tc.max, len(got))
		}
		if !utf8.ValidString(got) {
			t.Errorf("Cut(%.12q, %d) = %q is not valid UTF-8", tc.s, tc.max, got)
		}
		if String(tc.s, tc.max) != got {
			t.Errorf("String and Cut disagree on %.12q", tc.s)
		}
	}
}

func FuzzCut(f *testing.F) {
	f.Add("x€€€", 5)
	f.Fuzz(func(t *testing.T, s string, max int) {
		if max < len(Mark) || max > 1<<16 || !utf8.ValidString(s) {
			return
		}
		got, cut := Cut(s, max)
		if len(got) > max || !utf8.ValidString(got) || cut != (got != s) || cut && !strings.HasPrefix(s, strings.TrimSuffix(got, Mark)) {
			t.Fatalf("Cut(%q, %d) = %q, %v", s, max, got, cut)
		}
	})
}
