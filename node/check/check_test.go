package check

import (
	"crypto/ed25519"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/histor-observer/histor/crawl/scan"
	"github.com/histor-observer/histor/crawl/state"
	"github.com/histor-observer/histor/internal/httpx/httpxtest"
	hlog "github.com/histor-observer/histor/log"
	"github.com/histor-observer/histor/log/awr"
	"github.com/histor-observer/histor/log/mtl"
	"github.com/histor-observer/histor/node/catalog"
	"github.com/histor-observer/histor/node/check/checktest"
)

// The fixture's tool sets, endpoint and days (checktest's, which both /check suites seed).
const (
	toolsNow   = checktest.ToolsNow
	toolsOld   = checktest.ToolsOld
	toolsNew   = checktest.ToolsNew
	toolsFloat = checktest.ToolsFloat
	endpointOK = checktest.EndpointOK
)

var day1, day5, day9 = checktest.Day1, checktest.Day5, checktest.Day9

// fixedNow is the checker's clock in every test.
func fixedNow() time.Time { return time.Date(2026, 9, 23, 9, 13, 4, 0, time.UTC) }

// memLog is a label log of one tree head and the evidence put in it.
type memLog struct {
	head     hlog.Head
	evidence map[[2]string][]byte // by kind and SRI
}

func (l *memLog) Latest() hlog.Head { return l.head }

func (l *memLog) Evidence(kind, sri string) ([]byte, error) {
	if b, ok := l.evidence[[2]string{kind, sri}]; ok {
		return b, nil
	}
	return nil, hlog.ErrNotFound
}

// unobserved is the peer view of a server no observer holds, as
// node/peers' Members gives it.
func unobserved(string) ([]any, map[string]any, error) {
	return []any{}, map[string]any{"status": "unobserved", "counts": map[string]any{
		"observers": 0, "withDigest": 0, "digests": 0, "agreeing": 0}}, nil
}

// checkFixture is a Checker reading a crawl state of three targets through
// the catalog: "one" (observed, changed once), "two" (never observed) and
// "three" (delisted; its latest attempt failed).
type checkFixture struct {
	c   *Checker
	st  *state.Store
	lg  *memLog
	h   http.Handler // the part's routes, as the node routes them
	pub ed25519.PublicKey
	cat *catalog.Catalog // over st; reload it after committing to st
}

// newCheckFixture makes the fixture with the node's default limits, as
// edit changes them.
func newCheckFixture(t testing.TB, edit func(*Config)) *checkFixture {
	t.Helper()
	st, err := state.Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	pub, key, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	f := &checkFixture{st: st, pub: pub, lg: &memLog{
		head:     hlog.Head{Size: 1, Root: [32]byte{1, 2, 3}, Time: day9},
		evidence: map[[2]string][]byte{},
	}}
	f.seed(t)
	if f.cat, err = catalog.New(catalog.Options{Store: st, Log: f.lg, Patterns: scan.Default(), Now: fixedNow}); err != nil {
		t.Fatal(err)
	}
	cfg := Config{
		Key: key, DID: awr.DIDKey(pub), PublicURL: "https://observer.example", Now: fixedNow,
		ChecksPerMinute: DefaultChecksPerMinute, ScansPerHour: DefaultScansPerHour, MaxClients: DefaultMaxClients,
		Log: f.lg, Targets: CatalogTargets{f.cat}, Reports: CatalogReports{f.cat}, Patterns: scan.Default(), View: unobserved,
	}
	if edit != nil {
		edit(&cfg)
	}
	if f.c, err = New(cfg); err != nil {
		t.Fatal(err)
	}
	f.h = serveRoutes(Routes(func() *Checker { return f.c }, nil))
	return f
}

// serveRoutes answers through routes as the node's router does (httpxtest.Serve).
var serveRoutes = httpxtest.Serve

// seed writes the targets, their observations and timelines, and the
// evidence of the current set at "one" into the log.
func (f *checkFixture) seed(t testing.TB) {
	t.Helper()
	one := fixtureTarget("io.example/one", endpointOK, "ok", false)
	dOld, dNow := digestOf(t, toolsOld), digestOf(t, toolsNow)
	commit := func(u state.Update) {
		if err := f.st.Commit(u); err != nil {
			t.Fatal(err)
		}
	}
	commit(state.Update{Span: &state.Span{TargetID: one.ID, From: day1, Until: day1.Add(72 * time.Hour), Count: 4, Status: "ok", ToolSetDigest: dOld, SubjectDigest: "sha256-old"}})
	commit(state.Update{Span: &state.Span{TargetID: one.ID, From: day1.Add(96 * time.Hour), Until: day5, Count: 1, Status: "timeout"}})
	commit(state.Update{Target: one, Observation: &state.Observation{
		TargetID: one.ID, Status: "ok", ObservedAt: day9, Subject: "sha256-now", ToolSetDigest: dNow, ToolCount: 1,
		LastOK: day9, UnchangedSince: day5, FirstPinned: day1, OKObservations: 9, Attempts: 10, Changes: 1,
	}, Span: &state.Span{TargetID: one.ID, From: day5, Until: day9, Count: 5, Status: "ok", ToolSetDigest: dNow, SubjectDigest: "sha256-now"}})
	commit(state.Update{Target: fixtureTarget("io.example/two", "https://two.example/mcp", "timeout", false)})
	three := fixtureTarget("io.example/three", "https://three.example/mcp", "http-500", true)
	three.LastCrawled = day5
	commit(state.Update{Target: three, Observation: &state.Observation{
		TargetID: three.ID, Status: "http-500", Subject: "sha256-three", ToolSetDigest: dOld, ToolCount: 1, LastOK: day1, OKObservations: 1,
	}})
	f.lg.evidence[[2]string{hlog.EvidenceToolSets, dNow}] = canonicalTools(t, toolsNow)
}

// post sends body to /api/v1/check from remote (host:port) with extra
// headers ("Name: value").
func (f *checkFixture) post(t testing.TB, remote, body string, headers ...string) *httptest.ResponseRecorder {
	t.Helper()
	return checktest.Post(t, f.h, remote, body, headers...)
}

// answer posts body and verifies the signed answer, returning it decoded.
func (f *checkFixture) answer(t testing.TB, remote, body string) map[string]any {
	t.Helper()
	return checktest.Answer(t, f.h, f.pub, remote, body)
}

// The helpers both /check suites use.
var (
	digestOf          = checktest.DigestOf
	canonicalTools    = checktest.CanonicalTools
	verifyCheckAnswer = checktest.VerifyAnswer
	mustJSON          = checktest.MustJSON
	fixtureTarget     = checktest.Target
	body              = checktest.Body
)

func TestCheckMatches(t *testing.T) {
	f := newCheckFixture(t, nil)
	ep := `"endpoint":"` + endpointOK + `"`
	cases := []struct {
		name, body, match string
		seenBefore        bool
		scan              string // patternScan status, "" for none
	}{
		{"unknown endpoint", body(`"endpoint":"https://nowhere.example/mcp"`, `"tools":`+toolsNow), matchNotListed, false, "scanned"},
		{"unknown name", body(`"name":"io.example/nothing"`), matchNotListed, false, ""},
		{"never observed", body(`"endpoint":"https://two.example/mcp"`, `"toolSetDigest":"`+digestOf(t, toolsNew)+`"`), matchNotObserved, false, "not-scanned"},
		{"same tools", body(ep, `"tools":`+toolsNow), matchSame, false, "scanned"},
		{"same digest", body(ep, `"toolSetDigest":"`+digestOf(t, toolsNow)+`"`), matchSame, false, "scanned"},
		{"same, endpoint padded", body(`"endpoint":" `+endpointOK+`\n"`, `"tools":`+toolsNow), matchSame, false, "scanned"},
		{"earlier set", body(ep, `"tools":`+toolsOld), matchPrevious, true, "scanned"},
		{"other set", body(ep, `"tools":`+toolsNew), matchDifferent, false, "scanned"},
		{"no tools", body(`"name":"io.example/one"`), matchNoDigest, false, "scanned"},
		{"float in a schema", body(ep, `"tools":`+toolsFloat), matchUndigestible, false, ""},
		{"empty set", body(ep, `"tools":[]`), matchUndigestible, false, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := f.answer(t, "192.0.2.1:4000", c.body)
			if a["match"] != c.match {
				t.Fatalf("match = %v, want %s", a["match"], c.match)
			}
			if _, ok := a["seenBefore"]; ok != c.seenBefore {
				t.Errorf("seenBefore present = %v, want %v", ok, c.seenBefore)
			}
			ps, _ := a["patternScan"].(map[string]any)
			if got, _ := ps["status"].(string); got != c.scan {
				t.Errorf("patternScan.status = %q, want %q (%v)", got, c.scan, ps)
			}
			if a["note"] != checkNotes[c.match] {
				t.Errorf("note = %q, want %q", a["note"], checkNotes[c.match])
			}
		})
	}
}

func TestCheckAnswerShape(t *testing.T) {
	f := newCheckFixture(t, nil)
	dNow, dOld := digestOf(t, toolsNow), digestOf(t, toolsOld)
	id := mtl.ServerID("io.example/one", endpointOK)
	a := f.answer(t, "192.0.2.1:4000", body(`"endpoint":"`+endpointOK+`"`, `"tools":`+toolsOld))
	head := f.lg.Latest()
	want := map[string]any{
		"type": "histor.check/v1", "checkedAt": "2026-09-23T09:13:04Z", "issuer": f.c.did,
		"query": map[string]any{"endpoint": endpointOK, "toolSetDigest": dOld},
		"target": map[string]any{
			"id": id, "name": "io.example/one", "endpoint": endpointOK,
			"page": "https://observer.example/s/" + id, "badge": "https://observer.example/badge/" + id + ".svg",
			"lastStatus": "ok", "listed": true,
		},
		"observed": map[string]any{
			"toolSetDigest": dNow, "subjectDigest": "sha256-now", "toolCount": 1.0,
			"firstPinned": "2026-09-01T06:00:00Z", "unchangedSince": "2026-09-05T06:00:00Z",
			"lastObserved": "2026-09-09T06:00:00Z", "observations": 9.0, "changes": 1.0,
		},
		"seenBefore": map[string]any{"first_seen": "2026-09-01T06:00:00Z", "last_seen": "2026-09-04T06:00:00Z", "observations": 4.0},
		"match":      matchPrevious,
		"note":       checkNotes[matchPrevious],
		// The fixture's peer view holds no observer of any server.
		"observers": []any{},
		"agreement": map[string]any{"status": "unobserved", "counts": map[string]any{
			"observers": 0.0, "withDigest": 0.0, "digests": 0.0, "agreeing": 0.0}},
		"log": map[string]any{
			"treeSize": float64(head.Size), "rootHash": hex.EncodeToString(head.Root[:]),
			"timestamp": head.Time.UTC().Format(checkTimeLayout),
		},
	}
	ps := a["patternScan"].(map[string]any)
	delete(a, "patternScan")
	delete(a, "signature")
	if got, wantJSON := mustJSON(t, a), mustJSON(t, want); got != wantJSON {
		t.Errorf("answer\n got %s\nwant %s", got, wantJSON)
	}
	if ps["toolSetDigest"] != dOld || ps["patternSet"] != scan.Default().Digest() || ps["block"] != 0.0 || ps["advise"] != 0.0 {
		t.Errorf("patternScan = %v", ps)
	}
}

// TestCheckPicksTarget: by name, a listed target comes before a delisted
// one of the same name; a delisted target with a failed latest attempt says
// both in its note.
func TestCheckPicksTarget(t *testing.T) {
	f := newCheckFixture(t, nil)
	listed := fixtureTarget("io.example/three", "https://three-b.example/mcp", "", false)
	if err := f.st.Commit(state.Update{Target: listed}); err != nil {
		t.Fatal(err)
	}
	if err := f.cat.Reload(); err != nil {
		t.Fatal(err)
	}
	a := f.answer(t, "192.0.2.1:4000", body(`"name":"io.example/three"`))
	if tg := a["target"].(map[string]any); tg["id"] != listed.ID || tg["lastStatus"] != nil || tg["listed"] != true {
		t.Errorf("by name: target %v, want the listed one with lastStatus null", tg)
	}
	a = f.answer(t, "192.0.2.1:4000", body(`"endpoint":"https://three.example/mcp"`, `"toolSetDigest":"`+digestOf(t, toolsOld)+`"`))
	note := checkNotes[matchSame] + fmt.Sprintf(noteDelistedOn, "2026-09-05") + fmt.Sprintf(noteLatestFailed, "http-500")
	if a["match"] != matchSame || a["note"] != note || a["target"].(map[string]any)["listed"] != false {
		t.Errorf("delisted: match %v, note %q, target %v", a["match"], a["note"], a["target"])
	}
}

func TestCheckDigestError(t *testing.T) {
	f := newCheckFixture(t, nil)
	a := f.answer(t, "192.0.2.1:4000", body(`"endpoint":"`+endpointOK+`"`, `"tools":`+toolsFloat))
	q := a["query"].(map[string]any)
	de, _ := q["digestError"].(map[string]any)
	if de["code"] != mtl.CodeNumber || de["detail"] == "" || q["toolSetDigest"] != nil {
		t.Errorf("query = %v", q)
	}
	if _, ok := a["patternScan"]; ok {
		t.Error("an undigestible set got a patternScan: it would be another set's")
	}
}

func TestCheckRefusesBadRequests(t *testing.T) {
	f := newCheckFixture(t, nil)
	for _, b := range []string{
		`[]`, `"x"`, `{}`, `{"endpoint":""}`, `{"endpoint":7}`, `{"name":"a\u0000b"}`,
		`{"name":"` + strings.Repeat("é", 2001) + `"}`,
		`{"name":"n","tools":{}}`, `{"name":"n","toolSetDigest":"sha256-x"}`,
		`{"name":"n","name":"m"}`, `{"name":"n"} x`, `{"name":"\ud800"}`, `not json`,
		`{"name":"n","tools":[` + strings.Repeat(`{},`, maxCheckTools) + `{}]}`,
	} {
		if w := f.post(t, "192.0.2.1:4000", b); w.Code != http.StatusBadRequest || !strings.Contains(w.Body.String(), `"detail"`) {
			t.Errorf("POST %.60s: %d %s", b, w.Code, w.Body)
		}
	}
	if w := f.post(t, "192.0.2.1:4000", ""); w.Code != http.StatusBadRequest || !strings.Contains(w.Body.String(), "send endpoint or name") {
		t.Errorf("empty body: %d %s", w.Code, w.Body)
	}
}

func TestCheckWithoutState(t *testing.T) {
	f := newCheckFixture(t, nil)
	f.c.targets = nil
	if w := f.post(t, "192.0.2.1:4000", body(`"name":"x"`)); w.Code != http.StatusServiceUnavailable {
		t.Errorf("no targets: %d %s", w.Code, w.Body)
	}
}

func TestCheckWithoutPatternSet(t *testing.T) {
	f := newCheckFixture(t, nil)
	f.c.patterns = nil
	a := f.answer(t, "192.0.2.1:4000", body(`"endpoint":"`+endpointOK+`"`, `"tools":`+toolsNow))
	if _, ok := a["patternScan"]; ok || a["match"] != matchSame {
		t.Errorf("answer without a pattern set: %v", a)
	}
}

// TestCheckWords runs every note /check can render, and every note in a
// set of real answers, through the words rule.
func TestCheckWords(t *testing.T) {
	texts := []string{noteDelisted, noteDelistedOn, noteLatestFailed, noteScanned, noteBounded, noteBusy, noteNoTools, noteNoBudget}
	for _, n := range checkNotes {
		texts = append(texts, n)
	}
	f := newCheckFixture(t, nil)
	for _, b := range []string{
		body(`"endpoint":"`+endpointOK+`"`, `"tools":`+toolsNew),
		body(`"name":"io.example/three"`),
		body(`"endpoint":"https://two.example/mcp"`),
		body(`"name":"nothing"`),
	} {
		a := f.answer(t, "192.0.2.1:4000", b)
		texts = append(texts, a["note"].(string))
		if ps, ok := a["patternScan"].(map[string]any); ok {
			n, _ := ps["note"].(string)
			texts = append(texts, n)
		}
	}
	for _, s := range texts {
		if w := awr.ForbiddenWord(s); w != "" {
			t.Errorf("%q uses %q", s, w)
		}
	}
}
