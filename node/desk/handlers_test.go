package desk

import (
	"crypto/ed25519"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/histor-observer/histor/internal/httpx"
	hlog "github.com/histor-observer/histor/log"
	"github.com/histor-observer/histor/log/awr"
	"github.com/histor-observer/histor/log/format"
	"github.com/histor-observer/histor/log/keys"
	"github.com/histor-observer/histor/node/desk/desktest"
)

// emptyLog is a log with no head yet.
type emptyLog struct{ cp []byte }

func (l emptyLog) Latest() hlog.Head                                       { return hlog.Head{Checkpoint: l.cp} }
func (emptyLog) HeadAt(uint64) (hlog.Head, error)                          { return hlog.Head{}, nil }
func (emptyLog) EachEntry(_, _ uint64, _ func(uint64, []byte) error) error { return nil }
func (emptyLog) InclusionProof(_, _ uint64) ([][32]byte, error)            { return nil, nil }

// fakeFederation is a federation whose witness holds evidence about one
// of the two peers it checked.
type fakeFederation struct{ peers []PeerHead }

func (fakeFederation) DID() string                 { return "did:key:z6MkSelf" }
func (fakeFederation) Cosigned(h hlog.Head) []byte { return h.Checkpoint }
func (fakeFederation) Policy() *format.Policy      { return nil }
func (fakeFederation) Witness() Witness            { return fakeWitness{} }
func (f fakeFederation) Peers() []PeerHead         { return f.peers }

type fakeWitness struct{}

func (fakeWitness) Evidence() ([]HeldEvidence, error) {
	return []HeldEvidence{{ID: "00ff", Origin: "forked.example/log", Kind: "same-size", Seen: time.Date(2026, 9, 1, 0, 0, 0, 0, time.UTC)}}, nil
}
func (fakeWitness) Logs() []string { return []string{"other.example/log", "self.example/log"} }

// get routes a GET of path through the desk's routes mounted on m; a path
// no route matches is answered 404, as the node does.
func get(t *testing.T, m Mount, path string, hdr http.Header) (*http.Response, string) {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, path, nil)
	for k, v := range hdr {
		req.Header[k] = v
	}
	rec := httptest.NewRecorder()
	if mt := httpx.NewRouter(Routes(m)).Lookup(req); mt != nil {
		h, _ := mt.Handler(http.MethodGet)
		h.ServeHTTP(rec, req)
	} else {
		rec.WriteHeader(http.StatusNotFound)
	}
	body, _ := io.ReadAll(rec.Result().Body)
	return rec.Result(), string(body)
}

// TestNetworkPage: the peers come sorted by did, the one evidence names
// is marked forked, the clocks are in words, and the witnessed logs leave
// this one out.
func TestNetworkPage(t *testing.T) {
	at := time.Date(2026, 9, 23, 9, 0, 0, 0, time.UTC)
	f := fakeFederation{peers: []PeerHead{
		{DID: "did:key:z6MkB", Origin: "forked.example/log", Size: 9, Time: at, Clock: &Clock{Offset: 5 * time.Second, RTT: time.Second, At: at}},
		{DID: "did:key:z6MkA", Origin: "other.example/log", Size: 3, Time: at, Cosigners: []string{"w.example/w"}},
	}}
	m := Mount{Log: emptyLog{cp: []byte("self.example/log\n0\nroot\n")}, Federation: func() Federation { return f },
		Logger: slog.New(slog.DiscardHandler)}
	resp, page := get(t, m, "/network", nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /network: %d", resp.StatusCode)
	}
	for _, e := range desktest.Lint([]byte(page)) {
		t.Error(e)
	}
	for _, want := range []string{"did:key:z6MkSelf", "forked: see evidence", "5s ahead of this node&#39;s (measured 2026-09-23T09:00:00Z)",
		"not measured", "<li><code>other.example/log</code></li>", "2026-09-01T00:00:00Z", `href="/api/v1/evidence/00ff"`} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if strings.Contains(page, "<li><code>self.example/log</code></li>") {
		t.Error("the page lists its own log as witnessed")
	}
	if a, b := strings.Index(page, "did:key:z6MkA"), strings.Index(page, "did:key:z6MkB"); a < 0 || b < a {
		t.Error("peers not sorted by did")
	}
}

// TestWitnessViewUnmet: a checkpoint without the cosignature the quorum
// needs reads as not met, naming no witness.
func TestWitnessViewUnmet(t *testing.T) {
	logKey := ed25519.NewKeyFromSeed(make([]byte, 32))
	witKey := ed25519.NewKeyFromSeed([]byte(strings.Repeat("w", 32)))
	logVkey, err := keys.NoteVerifierKey("l.test/log", logKey.Public().(ed25519.PublicKey))
	if err != nil {
		t.Fatal(err)
	}
	witVkey, err := keys.CosignatureVerifierKey("w.test/witness", witKey.Public().(ed25519.PublicKey))
	if err != nil {
		t.Fatal(err)
	}
	p, err := format.ParsePolicy([]byte("log " + logVkey + "\nwitness w " + witVkey + "\ngroup all-of-them all w\nquorum all-of-them\n"))
	if err != nil {
		t.Fatal(err)
	}
	signer, err := keys.NoteSigner("l.test/log", logKey)
	if err != nil {
		t.Fatal(err)
	}
	cp, err := format.SignCheckpoint(signer, format.Checkpoint{Origin: "l.test/log", Size: 1, Root: [32]byte{1}})
	if err != nil {
		t.Fatal(err)
	}
	v := witnessView(p, cp)
	if !v.Configured || v.Met || v.Cosigned != 0 || v.Listed != 1 || v.Problem != "" || v.Witnesses[0].Cosigned {
		t.Errorf("witness view of an uncosigned checkpoint: %+v", v)
	}
	if w := policyWords(p, cp); !strings.Contains(w, "cosigned by 0 of them, does not meet it yet") || !strings.Contains(w, "(w.test/witness)") {
		t.Errorf("policy words: %s", w)
	}
}

func TestStaticFiles(t *testing.T) {
	m := Mount{}
	for _, tt := range []struct {
		path   string
		status int
		ctype  string
	}{
		{"/static/log.js", 200, "text/javascript; charset=utf-8"},
		{"/static/logtree.js", 200, "text/javascript; charset=utf-8"},
		{"/static/nope.js", 404, ""},
		{"/static/log.html", 404, ""},
		{"/static/..%2flog.js", 404, ""},
	} {
		resp, body := get(t, m, tt.path, nil)
		if resp.StatusCode != tt.status || (tt.ctype != "" && resp.Header.Get("Content-Type") != tt.ctype) {
			t.Errorf("GET %s: %d %q, want %d %q", tt.path, resp.StatusCode, resp.Header.Get("Content-Type"), tt.status, tt.ctype)
		}
		if tt.status != 200 {
			continue
		}
		if w := awr.ForbiddenWord(body); w != "" {
			t.Errorf("%s says %q", tt.path, w)
		}
		again, _ := get(t, m, tt.path, http.Header{"If-None-Match": {resp.Header.Get("ETag")}})
		if again.StatusCode != http.StatusNotModified {
			t.Errorf("GET %s with its ETag: %d, want 304", tt.path, again.StatusCode)
		}
	}
}

func TestPastedTools(t *testing.T) {
	for _, c := range []struct {
		in, want string
		err      bool
	}{
		{`[{"name":"a","n":2340}]`, `[{"name":"a","n":2340}]`, false},
		{`{"tools":[{"name":"a"}],"nextCursor":null}`, `[{"name":"a"}]`, false},
		{`{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a"}]}}`, `[{"name":"a"}]`, false},
		{``, ``, false},
		{`{"tools":5}`, ``, true},
		{`[1,`, ``, true},
	} {
		got, err := pastedTools([]byte(c.in))
		if (err != nil) != c.err || string(got) != c.want {
			t.Errorf("pastedTools(%s) = %s, %v", c.in, got, err)
		}
	}
}

func TestCosigners(t *testing.T) {
	note := "o.example/log\n3\nroot\n\n— o.example/log AAAA\n— w1.example AAAA\n— w2.example AAAA\n— w1.example BBBB\n"
	if got := cosigners([]byte(note), "o.example/log"); strings.Join(got, ",") != "w1.example,w2.example" {
		t.Errorf("cosigners = %v", got)
	}
}

// TestPagesWithoutCrawlState: a node that only witnesses serves every page
// and says why it lists nothing.
func TestPagesWithoutCrawlState(t *testing.T) {
	m := Mount{Log: emptyLog{cp: []byte("w.example/log\n0\nroot\n")}, Logger: slog.New(slog.DiscardHandler)}
	for _, c := range []struct {
		path   string
		status int
		want   string
	}{
		{"/", 200, "serves no crawl state, so it lists no servers"},
		{"/changes", 503, "serves no crawl state yet"},
		{"/changes/1", 404, "no change with that id"},
		{"/s/0123456789abcdef", 404, "no server with that id"},
		{"/check", 200, `<textarea id="tools" name="tools"`},
		{"/log", 200, `data-size="0"`},
		{"/network", 200, "w.example/log"},
		{"/about", 200, "w.example/log"},
	} {
		resp, page := get(t, m, c.path, nil)
		if resp.StatusCode != c.status || !strings.Contains(page, c.want) {
			t.Errorf("GET %s: %d, want %d with %q", c.path, resp.StatusCode, c.status, c.want)
		}
		for _, e := range desktest.Lint([]byte(page)) {
			t.Errorf("GET %s: %v", c.path, e)
		}
	}
}
