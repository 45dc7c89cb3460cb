package logapi

import (
	"compress/gzip"
	"errors"
	"net/http"
	"strings"

	"github.com/histor-observer/histor/internal/httpx"
	hlog "github.com/histor-observer/histor/log"
)

// C2SP tlog-tiles bounds (c2sp.org/tlog-tiles): levels 0..63, partial widths
// 1..255, a full tile 256 wide. An index is a uint64, so at most seven
// three-digit path elements ("x018/x446/x744/x073/x709/x551/615").
const (
	maxTileLevel    = 63
	fullTileWidth   = 256
	maxTileElements = 7
)

// tilePath is one parsed /log/tile/... request.
type tilePath struct {
	entries bool   // an entry bundle rather than a hash tile
	level   uint64 // hash tiles only
	index   uint64
	width   int // 256 for a full tile, 1..255 for a partial one
}

// errTilePath marks a path under /log/tile/ that is not in canonical C2SP
// form. It is refused rather than repaired: two spellings of one tile would
// let caches hold two copies and would hide client bugs.
var errTilePath = errors.New("malformed tile path")

// parseTilePath parses what follows "/log/tile/": "<L>/<N>[.p/<W>]" or
// "entries/<N>[.p/<W>]".
func parseTilePath(p string) (tilePath, error) {
	var t tilePath
	head, rest, ok := strings.Cut(p, "/")
	if !ok {
		return t, errTilePath
	}
	if head == "entries" {
		t.entries = true
	} else {
		level, ok := httpx.ParseCanonicalUint(head)
		if !ok || level > maxTileLevel {
			return t, errTilePath
		}
		t.level = level
	}
	t.width = fullTileWidth
	if n, w, partial := strings.Cut(rest, ".p/"); partial {
		width, ok := httpx.ParseCanonicalUint(w)
		if !ok || width < 1 || width >= fullTileWidth {
			return t, errTilePath
		}
		t.width, rest = int(width), n
	}
	index, err := parseTileIndex(rest)
	if err != nil {
		return t, err
	}
	t.index = index
	return t, nil
}

// parseTileIndex decodes "x001/x234/067" (all elements but the last start
// with "x", each exactly three digits, no leading "x000" element).
func parseTileIndex(s string) (uint64, error) {
	elems := strings.Split(s, "/")
	if len(elems) > maxTileElements || (len(elems) > 1 && elems[0] == "x000") {
		return 0, errTilePath
	}
	var n uint64
	for i, e := range elems {
		if i < len(elems)-1 {
			if !strings.HasPrefix(e, "x") {
				return 0, errTilePath
			}
			e = e[1:]
		}
		d, ok := threeDigits(e)
		if !ok || n > (^uint64(0)-d)/1000 {
			return 0, errTilePath
		}
		n = n*1000 + d
	}
	return n, nil
}

func threeDigits(s string) (uint64, bool) {
	if len(s) != 3 {
		return 0, false
	}
	var d uint64
	for i := 0; i < 3; i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		d = d*10 + uint64(c-'0')
	}
	return d, true
}

// serveTile answers /log/tile/... with a hash tile or an entry bundle.
func (m Mount) serveTile(w http.ResponseWriter, r *http.Request, rest string) {
	t, err := parseTilePath(rest)
	if err != nil {
		fail(w, http.StatusBadRequest, err.Error())
		return
	}
	var body []byte
	if t.entries {
		body, err = m.Log.EntryBundle(t.index, t.width)
	} else {
		body, err = m.Log.HashTile(t.level, t.index, t.width)
	}
	if errors.Is(err, hlog.ErrNotFound) {
		fail(w, http.StatusNotFound, "no such tile")
		return
	}
	if err != nil {
		m.internal(w, r, "reading tile", err)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/octet-stream")
	if t.width == fullTileWidth {
		h.Set("Cache-Control", httpx.CacheImmutable)
	} else {
		// A partial tile never changes either, but it is superseded by the
		// full tile and may be dropped; keep it out of caches for long.
		h.Set("Cache-Control", "public, max-age=3600")
	}
	if t.entries {
		h.Add("Vary", "Accept-Encoding")
		if acceptsGzip(r) {
			writeGzip(w, body)
			return
		}
	}
	w.Write(body)
}

// acceptsGzip reports whether the client listed gzip in Accept-Encoding.
// Entry bundles are labels, JSON text that compresses several-fold, and the
// spec asks logs to compress them at the HTTP layer.
func acceptsGzip(r *http.Request) bool {
	for _, v := range r.Header.Values("Accept-Encoding") {
		for _, part := range strings.Split(v, ",") {
			name, q, _ := strings.Cut(strings.TrimSpace(part), ";")
			if strings.EqualFold(strings.TrimSpace(name), "gzip") && !zeroQ(q) {
				return true
			}
		}
	}
	return false
}

// zeroQ reports whether a weight parameter is q=0 in any spelling RFC 9110
// allows ("q=0", "Q=0.0", "q=0.000"), which means "not acceptable".
func zeroQ(param string) bool {
	k, v, ok := strings.Cut(strings.TrimSpace(param), "=")
	if !ok || !strings.EqualFold(strings.TrimSpace(k), "q") {
		return false
	}
	v = strings.TrimSpace(v)
	return v == "0" || (strings.HasPrefix(v, "0.") && strings.Trim(v[2:], "0") == "" && len(v) <= 5)
}

func writeGzip(w http.ResponseWriter, body []byte) {
	w.Header().Set("Content-Encoding", "gzip")
	zw, _ := gzip.NewWriterLevel(w, gzip.BestSpeed) // error only for a bad level
	zw.Write(body)
	zw.Close()
}
