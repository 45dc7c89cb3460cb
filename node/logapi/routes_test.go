package logapi

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	hlog "github.com/histor-observer/histor/log"
	"github.com/histor-observer/histor/log/format"
)

func TestEntries(t *testing.T) {
	tl := newTestLog(t, 1234)
	cases := []struct {
		query       string
		start, want int
	}{
		{"", 0, 100},                        // HISTOR's default span
		{"?start=10&end=15", 10, 5},         // exactly the range
		{"?start=0&end=5000", 0, 1000},      // never more than 1000
		{"?start=1000&end=2000", 1000, 234}, // clipped to the log
		{"?start=1233", 1233, 1},
		{"?start=1234", 1234, 0},
		{"?start=99999999", 99999999, 0},
		{"?start=7&end=7", 7, 0},
		{"?start=18446744073709551615", 0, 0},
	}
	for _, c := range cases {
		_, body := get(t, tl.srv, "/api/v1/log/entries"+c.query)
		var got struct {
			Start   uint64         `json:"start"`
			Entries []entrySummary `json:"entries"`
		}
		if err := json.Unmarshal(body, &got); err != nil {
			t.Fatalf("%s: %v", c.query, err)
		}
		if len(got.Entries) != c.want {
			t.Errorf("%s: %d entries, want %d", c.query, len(got.Entries), c.want)
		}
		for i, e := range got.Entries {
			idx := int(got.Start) + i
			if e.LeafIndex != uint64(idx) || e.ID != labelID(idx) || e.Verdict != "pass" || e.MethodShort == "" ||
				e.IssuedAt != "2026-09-23T09:00:00Z" || e.Digest != sriOf(tl.labels[idx]) || e.TargetID != nil {
				t.Fatalf("%s: entry %d = %+v", c.query, i, e)
			}
		}
	}
}

// TestMaxEntries: a smaller MaxEntries is the bound served.
func TestMaxEntries(t *testing.T) {
	tl := newTestLog(t, 50)
	m := tl.mount()
	m.MaxEntries = 7
	srv := serveMount(t, m)
	_, body := get(t, srv, "/api/v1/log/entries?start=0&end=50")
	if c := strings.Count(string(body), `"leaf_index"`); c != 7 {
		t.Fatalf("%d entries with MaxEntries 7: %s", c, body)
	}
	_, body = get(t, srv, "/api/v1/log/entries?start=45&end=50")
	if c := strings.Count(string(body), `"leaf_index"`); c != 5 || !strings.Contains(string(body), `"leaf_index":49`) {
		t.Fatalf("entries 45..50: %s", body)
	}
}

// mapTargets is a crawl state's label targets; a label it does not hold
// has none, and broken fails.
type mapTargets struct {
	targets map[string]string
	broken  string
}

func (m mapTargets) LabelTarget(id string) (string, error) {
	if id == m.broken {
		return "", errors.New("unreadable")
	}
	return m.targets[id], nil
}

// TestEntriesTargets: each row names the server the crawl state says the
// label labels, null where it knows none; a state that cannot be read is a
// 500, not a page of nulls.
func TestEntriesTargets(t *testing.T) {
	tl := newTestLog(t, 3)
	state := mapTargets{targets: map[string]string{labelID(0): "0011223344556677", labelID(2): "8899aabbccddeeff"}}
	m := tl.mount()
	m.Targets = func() Targets { return state }
	var got struct {
		Entries []entrySummary `json:"entries"`
	}
	_, body := get(t, serveMount(t, m), "/api/v1/log/entries")
	if err := json.Unmarshal(body, &got); err != nil || len(got.Entries) != 3 {
		t.Fatalf("entries %s: %v", body, err)
	}
	for i, e := range got.Entries {
		want := state.targets[labelID(i)]
		if (want == "") != (e.TargetID == nil) || (e.TargetID != nil && *e.TargetID != want) {
			t.Errorf("entry %d target_id = %v, want %q", i, e.TargetID, want)
		}
	}
	state.broken = labelID(1)
	if resp, body := get(t, serveMount(t, m), "/api/v1/log/entries"); resp.StatusCode != http.StatusInternalServerError {
		t.Errorf("entries over an unreadable crawl state: %d %s", resp.StatusCode, body)
	}
}

func TestLabelAndEvidenceBytes(t *testing.T) {
	tl := newTestLog(t, 5)
	for i, want := range tl.labels {
		resp, body := get(t, tl.srv, "/api/v1/labels/"+labelID(i))
		if !bytes.Equal(body, want) || resp.Header.Get("Content-Type") != "application/vc" {
			t.Fatalf("label %d: got %q (%s)", i, body, resp.Header.Get("Content-Type"))
		}
	}
	_, body := get(t, tl.srv, "/api/v1/toolsets/"+tl.sri)
	if !bytes.Equal(body, tl.evidence) {
		t.Fatalf("evidence: %q", body)
	}
	for path, want := range map[string]int{
		"/api/v1/labels/" + strings.Repeat("a", MaxIDBytes+1): http.StatusBadRequest,
		"/api/v1/labels/urn:uuid:unknown":                     http.StatusNotFound,
		"/api/v1/descriptors/" + tl.sri:                       http.StatusNotFound,
		"/api/v1/toolsets/sha256-short":                       http.StatusBadRequest,
	} {
		if resp, body := get(t, tl.srv, path); resp.StatusCode != want {
			t.Errorf("%s: %d %s, want %d", path, resp.StatusCode, body, want)
		}
	}
}

func TestEntryBundleGzip(t *testing.T) {
	tl := newTestLog(t, 300)
	req, _ := http.NewRequest("GET", tl.srv.URL+"/log/tile/entries/000", nil)
	req.Header.Set("Accept-Encoding", "gzip") // set by hand, so the client does not decode it
	resp, err := tl.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.Header.Get("Content-Encoding") != "gzip" || !strings.Contains(resp.Header.Get("Vary"), "Accept-Encoding") {
		t.Fatalf("headers %v", resp.Header)
	}
	zr, err := gzip.NewReader(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	bundle, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	entries, err := format.SplitBundle(bundle, 256)
	if err != nil || !bytes.Equal(entries[255], tl.labels[255]) {
		t.Fatalf("bundle: %d entries, %v", len(entries), err)
	}
}

// TestHeadsOfAnEmptyLog: HISTOR signs no head over an empty tree, so both
// JSON head routes answer 404 until the first label; a head at size 0 is
// never served, also once the log has grown.
func TestHeadsOfAnEmptyLog(t *testing.T) {
	tl := newTestLog(t, 0)
	for _, path := range []string{"/api/v1/log/sth", "/api/v1/log/sth/0", "/api/v1/log/sth/1"} {
		resp, body := get(t, tl.srv, path)
		var d struct{ Detail string }
		if err := json.Unmarshal(body, &d); err != nil || resp.StatusCode != http.StatusNotFound || d.Detail != "the log is empty" {
			t.Errorf("%s of an empty log: %d %s (%v)", path, resp.StatusCode, body, err)
		}
	}
	if _, err := LatestSTH(tl.log); !errors.Is(err, ErrEmptyLog) {
		t.Errorf("LatestSTH of an empty log: %v", err)
	}
	tl.appendLabels(t, 1)
	resp, body := get(t, tl.srv, "/api/v1/log/sth")
	if resp.StatusCode != http.StatusOK {
		t.Errorf("head after the first label: %d", resp.StatusCode)
	}
	if sth, err := format.VerifySTH(body, tl.pub); err != nil || sth.TreeSize != 1 {
		t.Errorf("head after the first label: %+v, %v", sth, err)
	}
	resp, body = get(t, tl.srv, "/api/v1/log/sth/0")
	if resp.StatusCode != http.StatusNotFound || !strings.Contains(string(body), "no signed tree head at that size") {
		t.Errorf("head at size 0 of a grown log: %d %s", resp.StatusCode, body)
	}
}

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
	tl := newTestLog(t, 600)
	var logs bytes.Buffer
	m := tl.mount()
	m.Log = damagedLog{tl.log}
	m.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	srv := serveMount(t, m)
	for _, path := range []string{"/api/v1/log/proof/inclusion?leaf_index=5&tree_size=600", "/log/tile/0/000"} {
		resp, body := get(t, srv, path)
		if resp.StatusCode != http.StatusInternalServerError || strings.Contains(string(body), "tile 0/0") {
			t.Errorf("%s over a damaged store: %d %s, want 500 without detail", path, resp.StatusCode, body)
		}
	}
	if got := strings.Count(logs.String(), "corrupt log: tile 0/0"); got != 2 {
		t.Errorf("want both failures logged with what is damaged; logs:\n%s", logs.String())
	}
}
