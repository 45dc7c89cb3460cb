package proofs

import (
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/histor-observer/histor/internal/httpx"
	hlog "github.com/histor-observer/histor/log"
)

// fakeTree has size leaves and a one-hash proof between any two sizes, or
// err.
type fakeTree struct {
	size uint64
	err  error
}

func (f fakeTree) Size() uint64 { return f.size }

func (f fakeTree) ConsistencyProof(first, second uint64) ([][32]byte, error) {
	if f.err != nil {
		return nil, f.err
	}
	return [][32]byte{{0xab, 0x01}}, nil
}

func TestAppendHexList(t *testing.T) {
	for _, tc := range []struct {
		in   [][32]byte
		want string
	}{
		{nil, `[]`},
		{[][32]byte{{0xff}}, `["ff00000000000000000000000000000000000000000000000000000000000000"]`},
		{[][32]byte{{1}, {2}}, `["0100000000000000000000000000000000000000000000000000000000000000","0200000000000000000000000000000000000000000000000000000000000000"]`},
	} {
		if got := string(AppendHexList([]byte("x"), tc.in)); got != "x"+tc.want {
			t.Errorf("%v: %s, want x%s", tc.in, got, tc.want)
		}
	}
}

// TestServeConsistency: HISTOR's bounds and texts, an empty proof between
// equal sizes, a range error the caller's 400 and any other a bare 500.
func TestServeConsistency(t *testing.T) {
	hash := `"ab01000000000000000000000000000000000000000000000000000000000000"`
	logger := slog.New(slog.DiscardHandler)
	for _, tc := range []struct {
		query  string
		tree   fakeTree
		status int
		body   string
	}{
		{"first=1&second=3", fakeTree{size: 3}, 200, `{"first":1,"second":3,"proof":[` + hash + `]}`},
		{"first=3&second=3", fakeTree{size: 3}, 200, `{"first":3,"second":3,"proof":[]}`},
		{"first=0&second=3", fakeTree{size: 3}, 400, `{"detail":"first must be at least 1"}`},
		{"first=3&second=2", fakeTree{size: 3}, 400, `{"detail":"first must not exceed second"}`},
		{"first=1&second=4", fakeTree{size: 3}, 400, `{"detail":"second is larger than the log"}`},
		{"first=1", fakeTree{size: 3}, 400, `{"detail":"second is required"}`},
		{"first=1&first=1&second=2", fakeTree{size: 3}, 400, `{"detail":"first is given more than once"}`},
		{"first=1&second=2", fakeTree{size: 3, err: &hlog.RangeError{What: "size"}}, 400, `{"detail":"out of range: size"}`},
		{"first=1&second=2", fakeTree{size: 3, err: errors.New("disk on fire")}, 500, `{"detail":"internal error"}`},
	} {
		rec := httptest.NewRecorder()
		ServeConsistency(rec, httptest.NewRequest(http.MethodGet, "/p?"+tc.query, nil), tc.tree, logger)
		body, _ := io.ReadAll(rec.Body)
		if rec.Code != tc.status || (tc.body != "" && string(body) != tc.body) {
			t.Errorf("%s: %d %s, want %d %s", tc.query, rec.Code, body, tc.status, tc.body)
		}
		if tc.status == 200 && rec.Header().Get("Cache-Control") != httpx.CacheImmutable {
			t.Errorf("%s: Cache-Control %q", tc.query, rec.Header().Get("Cache-Control"))
		}
	}
}
