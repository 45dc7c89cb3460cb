package logapi

import (
	"math"
	"math/rand/v2"
	"net/http/httptest"
	"strings"
	"testing"

	"filippo.io/torchwood"
	"golang.org/x/mod/sumdb/tlog"
)

func TestParseTilePath(t *testing.T) {
	good := []struct {
		in   string
		want tilePath
	}{
		{"0/000", tilePath{level: 0, index: 0, width: 256}},
		{"0/067", tilePath{index: 67, width: 256}},
		{"1/x001/x234/067", tilePath{level: 1, index: 1234067, width: 256}},
		{"63/999", tilePath{level: 63, index: 999, width: 256}},
		{"2/001.p/5", tilePath{level: 2, index: 1, width: 5}},
		{"0/x001/000.p/255", tilePath{index: 1000, width: 255}},
		{"entries/x001/x234/067", tilePath{entries: true, index: 1234067, width: 256}},
		{"entries/000.p/1", tilePath{entries: true, width: 1}},
		{"0/x018/x446/x744/x073/x709/x551/615", tilePath{index: math.MaxUint64, width: 256}},
	}
	for _, c := range good {
		got, err := parseTilePath(c.in)
		if err != nil || got != c.want {
			t.Errorf("parseTilePath(%q) = %+v, %v; want %+v", c.in, got, err, c.want)
		}
	}
	bad := []string{
		"", "0", "0/", "00/000", "01/000", "64/000", "-1/000", "a/000", "entries",
		"0/67", "0/0067", "0/x067", "0/067/", "0/x000/067", "0/x1/067", "0/y001/067",
		"0/x001/x234/67", "0/000.p/0", "0/000.p/256", "0/000.p/05", "0/000.p/", "0/000.p/1/",
		"0/000.p", "0/000.q/1", "0/x018/x446/x744/x073/x709/x551/616", // overflows uint64
		"0/x001/x000/x000/x000/x000/x000/x000/000", // eight elements
		"entries/67", "entries/000.p/256", "tiles/000", "0/+01", "0/0x1",
	}
	for _, in := range bad {
		if got, err := parseTilePath(in); err == nil {
			t.Errorf("parseTilePath(%q) = %+v, want an error", in, got)
		}
	}
}

func TestAcceptsGzip(t *testing.T) {
	for v, want := range map[string]bool{
		"": false, "gzip": true, "identity, gzip": true, "GZip;q=0.5": true, "gzip;q=0": false, "br": false, "x-gzip": false,
		// RFC 9110 §12.4.2: a qvalue of zero, however spelled, means "not acceptable".
		"gzip;q=0.0": false, "gzip; q=0.000": false, "gzip;Q=0": false, "gzip;q=0.001": true,
	} {
		r := httptest.NewRequest("GET", "/", nil)
		if v != "" {
			r.Header.Set("Accept-Encoding", v)
		}
		if got := acceptsGzip(r); got != want {
			t.Errorf("acceptsGzip(%q) = %v, want %v", v, got, want)
		}
	}
}

// TestTilePathsAgreeWithTorchwood uses torchwood's C2SP path writer as an
// oracle for our parser.
func TestTilePathsAgreeWithTorchwood(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 5000 {
		tile := tlog.Tile{H: 8, L: r.IntN(64) - 1, N: r.Int64N(1 << uint(r.IntN(62)+1)), W: 256}
		if r.IntN(2) == 0 {
			tile.W = r.IntN(255) + 1
		}
		path := torchwood.TilePath(tile)
		got, err := parseTilePath(strings.TrimPrefix(path, "tile/"))
		want := tilePath{entries: tile.L == -1, index: uint64(tile.N), width: tile.W}
		if tile.L >= 0 {
			want.level = uint64(tile.L)
		}
		if err != nil || got != want {
			t.Fatalf("parseTilePath(%q) = %+v, %v; want %+v", path, got, err, want)
		}
	}
}
