package node

import (
	"bytes"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	hlog "github.com/histor-observer/histor/log"
)

// damagedLog is a served log whose store lost its records: every read that
// reaches them fails as the log reports damage.
type damagedLog struct{ Log }

func (damagedLog) InclusionProof(uint64, uint64) ([][32]byte, error) {
	return nil, &hlog.CorruptError{What: "tile 0/0", Err: errLost}
}

func (damagedLog) HashTile(uint64, uint64, int) ([]byte, error) {
	return nil, &hlog.CorruptError{What: "tile 0/0", Err: errLost}
}

var errLost = &hlog.RangeError{What: "never a client's"} // a wrapped RangeError must not make it a 400

// TestDamageIsNotTheClientsFault: a damaged store answers 500 with no detail
// of the store, and logs what is wrong; the client is never told its request
// was bad (400) or beyond the log (404).
func TestDamageIsNotTheClientsFault(t *testing.T) {
	tn := newTestNode(t, 600)
	var logs bytes.Buffer
	cfg := tn.node.cfg
	cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	srv := httptest.NewServer(newAPI(damagedLog{tn.node.Log()}, tn.node.id.issuerDoc, cfg))
	defer srv.Close()
	for _, path := range []string{"/api/v1/log/proof/inclusion?leaf_index=5&tree_size=600", "/log/tile/0/000"} {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusInternalServerError {
			t.Errorf("%s over a damaged store: %d, want 500", path, resp.StatusCode)
		}
	}
	if got := strings.Count(logs.String(), "corrupt log: tile 0/0"); got != 2 {
		t.Errorf("want both failures logged with what is damaged; logs:\n%s", logs.String())
	}
}
