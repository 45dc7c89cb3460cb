package logapi

import (
	"fmt"
	"strconv"
	"testing"
)

// renderTilePath writes a parsed tile path back in canonical C2SP form.
func renderTilePath(t tilePath) string {
	s := fmt.Sprintf("%03d", t.index%1000)
	for n := t.index / 1000; n > 0; n /= 1000 {
		s = fmt.Sprintf("x%03d/", n%1000) + s
	}
	head := strconv.FormatUint(t.level, 10)
	if t.entries {
		head = "entries"
	}
	s = head + "/" + s
	if t.width != fullTileWidth {
		s += ".p/" + strconv.Itoa(t.width)
	}
	return s
}

// FuzzParseTilePath: whatever the parser accepts is the one canonical
// spelling of the tile it names.
func FuzzParseTilePath(f *testing.F) {
	for _, s := range []string{"0/000", "1/x001/x234/067", "entries/002.p/88", "63/x018/x446/x744/x073/x709/x551/615", "0/x000/001", "00/1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		tp, err := parseTilePath(s)
		if err != nil {
			return
		}
		if got := renderTilePath(tp); got != s {
			t.Fatalf("accepted %q, canonical form %q", s, got)
		}
		if tp.level > maxTileLevel || tp.width < 1 || tp.width > fullTileWidth {
			t.Fatalf("accepted %q out of bounds: %+v", s, tp)
		}
	})
}
