package node

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/histor-observer/histor/crawl/state"
	"github.com/histor-observer/histor/node/catalog"
	"github.com/histor-observer/histor/node/check"
)

// The AIMarket peer's own tests are node/aimarket's; these check what the
// node gives it: its own key, the checker and the read model.

// aimarketFixture is the /check fixture with its catalog serving the read
// API and one change, so every capability has something to say.
func aimarketFixture(t *testing.T) *checkFixture {
	f := newCheckFixture(t, nil)
	one := mtlServerID("io.example/one", endpointOK)
	summary := `{"added":["shout"],"removed":[],"modified":[{"tool":"echo","fields":["description"]}],"newAddresses":["elsewhere.example"],"detail":"full"}`
	if err := f.st.Commit(state.Update{Change: &state.Change{ID: "c1", TargetID: one, Name: "io.example/one", Endpoint: endpointOK,
		Before: "sha256-a", After: "sha256-b", At: day5, Summary: json.RawMessage(summary)}}); err != nil {
		t.Fatal(err)
	}
	c, err := catalog.New(catalog.Options{Store: f.st, Log: f.node.Log(), Now: fixedNow})
	if err != nil {
		t.Fatal(err)
	}
	f.cat = c
	f.editChecker(t, func(cfg *check.Config) { cfg.Targets = check.CatalogTargets{Catalog: c} })
	f.node.api.Load().setReadAPI(&ReadAPI{Catalog: c, PublicBase: "https://observer.example", Now: fixedNow})
	return f
}

func mtlServerID(name, endpoint string) string {
	sum := sha256.Sum256([]byte(name + "\n" + endpoint))
	return hex.EncodeToString(sum[:])[:16]
}

func (f *checkFixture) request(t testing.TB, method, path, body string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	req.RemoteAddr = "192.0.2.7:4000"
	w := httptest.NewRecorder()
	f.h.ServeHTTP(w, req)
	return w
}

// TestNodeAIMarketPeer: the node's peer signs with its AIMarket key, not
// the log key, and its capabilities answer from the node's checker (the
// log key's signed /check answer, whole) and read model.
func TestNodeAIMarketPeer(t *testing.T) {
	f := aimarketFixture(t)
	var well struct {
		Signer string `json:"signer_public_key"`
	}
	if w := f.request(t, http.MethodGet, "/.well-known/ai-market.json", ""); w.Code != 200 || json.Unmarshal(w.Body.Bytes(), &well) != nil {
		t.Fatalf("well-known: %d %s", w.Code, w.Body)
	}
	if pub, err := base64.StdEncoding.DecodeString(well.Signer); err != nil || bytes.Equal(pub, f.pub) {
		t.Errorf("the AIMarket key %q is the log key (%v)", well.Signer, err)
	}
	for _, tc := range []struct{ capability, input, want string }{
		{"histor.check@v1", `{"endpoint":"` + endpointOK + `","tools":` + toolsNow + `}`, `"match":"same"`},
		{"histor.server@v1", `{"name":"io.example/one"}`, `"endpoint":"` + endpointOK + `"`},
		{"histor.changes@v1", `{}`, `"page":"https://observer.example/s/` + mtlServerID("io.example/one", endpointOK) + `"`},
	} {
		w := f.request(t, http.MethodPost, "/ai-market/v2/invoke", `{"capability_id":"`+tc.capability+`","input":`+tc.input+`}`)
		var reply struct{ Result json.RawMessage }
		if w.Code != 200 || !strings.Contains(w.Body.String(), tc.want) || json.Unmarshal(w.Body.Bytes(), &reply) != nil {
			t.Fatalf("%s: %d %s", tc.capability, w.Code, w.Body)
		}
		if tc.capability == "histor.check@v1" {
			verifyCheckAnswer(t, reply.Result, f.pub)
		}
	}
}
