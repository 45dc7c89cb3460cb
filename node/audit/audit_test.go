package audit_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/histor-observer/histor/log/format"
	"github.com/histor-observer/histor/node/audit"
)

func runAudit(t *testing.T, base, state string, opt audit.Options) (*audit.Report, error) {
	t.Helper()
	opt.Base, opt.StatePath = base, state
	return audit.Run(context.Background(), opt)
}

func mustPass(t *testing.T, base, state string, opt audit.Options) *audit.Report {
	t.Helper()
	rep, err := runAudit(t, base, state, opt)
	if err != nil {
		t.Fatalf("audit of an honest log failed: %v", err)
	}
	return rep
}

// mustMisbehave runs an audit that must find the log misbehaving in check, and must leave the
// state file as it was.
func mustMisbehave(t *testing.T, base, state, check string, opt audit.Options) *audit.MisbehaviourError {
	t.Helper()
	before, _ := os.ReadFile(state)
	_, err := runAudit(t, base, state, opt)
	var mis *audit.MisbehaviourError
	if !errors.As(err, &mis) || audit.ExitCode(err) != 1 {
		t.Fatalf("want misbehaviour (exit 1), got exit %d: %v", audit.ExitCode(err), err)
	}
	if mis.Check != check {
		t.Errorf("failed check %q (%v), want %q", mis.Check, err, check)
	}
	after, _ := os.ReadFile(state)
	if !bytes.Equal(before, after) {
		t.Errorf("a failed audit changed the state file")
	}
	return mis
}

func mustBeIncomplete(t *testing.T, base, state string, opt audit.Options) {
	t.Helper()
	_, err := runAudit(t, base, state, opt)
	var inc *audit.IncompleteError
	if !errors.As(err, &inc) || audit.ExitCode(err) != 2 {
		t.Fatalf("want an incomplete audit (exit 2), got exit %d: %v", audit.ExitCode(err), err)
	}
}

func TestHonestLogPassesAndHeadIsKept(t *testing.T) {
	tl := newTestLog(t, "")
	state := filepath.Join(t.TempDir(), "sub", "sth.json")

	// An empty log has no head (HISTOR signs none over an empty tree):
	// nothing to audit yet, and nothing kept, so the next run is a first one.
	rep := mustPass(t, tl.srv.URL, state, audit.Options{})
	if !rep.Empty || rep.TreeSize != 0 || rep.DID != tl.did {
		t.Fatalf("first run on an empty log: %+v", rep)
	}
	if _, err := os.Stat(state); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("an empty log's audit kept a state file: %v", err)
	}
	tl.appendLabels(t, 1)
	if rep = mustPass(t, tl.srv.URL, state, audit.Options{}); rep.Empty || rep.TreeSize != 1 || rep.Consistency != "" {
		t.Fatalf("first run on a log of one label: %+v", rep)
	}
	tl.appendLabels(t, 2)
	if rep = mustPass(t, tl.srv.URL, state, audit.Options{}); rep.Consistency != "ok (1 → 3)" {
		t.Errorf("consistency %q, want ok (1 → 3)", rep.Consistency)
	}
	tl.appendLabels(t, 4)
	if rep = mustPass(t, tl.srv.URL, state, audit.Options{}); rep.Consistency != "ok (3 → 7)" || rep.TreeSize != 7 {
		t.Errorf("report %+v, want size 7, consistency ok (3 → 7)", rep)
	}
	if rep = mustPass(t, tl.srv.URL, state, audit.Options{}); rep.Consistency != "unchanged" {
		t.Errorf("consistency %q, want unchanged", rep.Consistency)
	}
	kept, err := os.ReadFile(state)
	if err != nil {
		t.Fatal(err)
	}
	served := tl.node.Log().Latest().STH
	if !bytes.Equal(kept, served) {
		t.Errorf("state file holds\n%s\nwant the served head\n%s", kept, served)
	}
}

func TestLabelInclusion(t *testing.T) {
	tl := newTestLog(t, "")
	tl.appendLabels(t, 5)
	rep := mustPass(t, tl.srv.URL, "", audit.Options{LabelID: tl.ids[2]})
	if rep.Label == nil || rep.Label.LeafIndex != 2 || rep.Label.ID != tl.ids[2] {
		t.Errorf("label report %+v, want leaf 2 of %s", rep.Label, tl.ids[2])
	}
}

func TestTilesOfAnHonestLog(t *testing.T) {
	if testing.Short() {
		t.Skip("signs and appends 520 labels; skipped under -short")
	}
	tl := newTestLog(t, "")
	tl.appendLabels(t, 520) // two full entry bundles, a partial one, and a level-1 tile
	rep := mustPass(t, tl.srv.URL, "", audit.Options{Tiles: true})
	if rep.Tiles == nil || rep.Tiles.Entries != 520 || rep.Tiles.EntryBundles != 3 || rep.Tiles.HashTiles != 4 {
		t.Errorf("tiles report %+v, want 520 entries, 3 bundles, 4 hash tiles (L0 ×3, L1 .p/2)", rep.Tiles)
	}
}

func TestTilesOfAnEmptyAndASmallLog(t *testing.T) {
	tl := newTestLog(t, "")
	if rep := mustPass(t, tl.srv.URL, "", audit.Options{Tiles: true}); !rep.Empty || rep.Tiles != nil {
		t.Errorf("empty log: %+v", rep)
	}
	tl.appendLabels(t, 3)
	if rep := mustPass(t, tl.srv.URL, "", audit.Options{Tiles: true}); rep.Tiles.Entries != 3 || rep.Tiles.HashTiles != 1 {
		t.Errorf("3 labels: %+v", rep.Tiles)
	}
}

// forkedPair returns two logs under one key holding different labels.
func forkedPair(t *testing.T, nA, nB int) (*testLog, *testLog) {
	a := newTestLog(t, "")
	b := newTestLog(t, seedPath(a))
	if a.did != b.did {
		t.Fatalf("logs from one seed have different keys")
	}
	a.appendLabels(t, nA)
	b.appendLabels(t, nB)
	return a, b
}

func TestForkAtTheSameSize(t *testing.T) {
	a, b := forkedPair(t, 3, 3)
	state := filepath.Join(t.TempDir(), "sth.json")
	mustPass(t, a.srv.URL, state, audit.Options{})
	mis := mustMisbehave(t, b.srv.URL, state, "consistency", audit.Options{})
	if !strings.Contains(mis.Reason, "rewrote") {
		t.Errorf("reason %q does not say the log rewrote its history", mis.Reason)
	}
	inc := mustHoldFork(t, mis, a.node.Log().Latest().STH, b.node.Log().Latest().STH)
	if len(inc.Proof) != 0 {
		t.Errorf("a same-size fork carries a proof of %d hashes", len(inc.Proof))
	}
}

// mustHoldFork checks that a misbehaviour carries the fork's evidence: both signed heads,
// byte for byte as the log served them.
func mustHoldFork(t *testing.T, mis *audit.MisbehaviourError, smaller, larger []byte) *format.InconsistencyError {
	t.Helper()
	var inc *format.InconsistencyError
	if !errors.As(mis, &inc) {
		t.Fatalf("misbehaviour %v carries no *format.InconsistencyError", mis)
	}
	if !bytes.Equal(inc.Smaller.Raw, smaller) || !bytes.Equal(inc.Larger.Raw, larger) {
		t.Errorf("evidence holds\n%s\nand\n%s\nwant\n%s\nand\n%s", inc.Smaller.Raw, inc.Larger.Raw, smaller, larger)
	}
	return inc
}

func TestForkThatGrew(t *testing.T) {
	a, b := forkedPair(t, 3, 6)
	state := filepath.Join(t.TempDir(), "sth.json")
	mustPass(t, a.srv.URL, state, audit.Options{})
	mis := mustMisbehave(t, b.srv.URL, state, "consistency", audit.Options{})
	if !strings.Contains(mis.Reason, "NOT consistent") {
		t.Errorf("reason %q does not name the failed consistency proof", mis.Reason)
	}
	inc := mustHoldFork(t, mis, a.node.Log().Latest().STH, b.node.Log().Latest().STH)
	if len(inc.Proof) == 0 || inc.Smaller.Size != 3 || inc.Larger.Size != 6 {
		t.Errorf("evidence of sizes %d and %d with %d proof hashes, want 3, 6 and a proof", inc.Smaller.Size, inc.Larger.Size, len(inc.Proof))
	}
}

func TestShrunkLog(t *testing.T) {
	a, b := forkedPair(t, 5, 0)
	b.appendLabels(t, 3)
	state := filepath.Join(t.TempDir(), "sth.json")
	mustPass(t, a.srv.URL, state, audit.Options{})
	mis := mustMisbehave(t, b.srv.URL, state, "consistency", audit.Options{})
	if !strings.Contains(mis.Reason, "shrank") {
		t.Errorf("reason %q does not say the log shrank", mis.Reason)
	}
}

// TestEmptyAfterAHeadWasKept: a log that answers "empty" once a head was
// kept has gone back.
func TestEmptyAfterAHeadWasKept(t *testing.T) {
	a := newTestLog(t, "")
	a.appendLabels(t, 2)
	state := filepath.Join(t.TempDir(), "sth.json")
	mustPass(t, a.srv.URL, state, audit.Options{})
	h := a.node.Handler()
	empty := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/api/v1/log/sth" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			w.Write([]byte(`{"detail": "the log is empty"}`))
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(empty.Close)
	mis := mustMisbehave(t, empty.URL, state, "consistency", audit.Options{})
	if !strings.Contains(mis.Reason, "size 2 was kept") {
		t.Errorf("reason %q does not name the kept head", mis.Reason)
	}
}

func TestChangedKey(t *testing.T) {
	a := newTestLog(t, "")
	a.appendLabels(t, 1)
	other := newTestLog(t, "")
	state := filepath.Join(t.TempDir(), "sth.json")
	mustPass(t, a.srv.URL, state, audit.Options{})
	mustMisbehave(t, other.srv.URL, state, "key", audit.Options{})
}

// editJSON rewrites one member of a JSON object answer.
func editJSON(t *testing.T, edit func(map[string]any)) func([]byte) []byte {
	return func(b []byte) []byte {
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Errorf("tampering: %v", err)
			return b
		}
		edit(m)
		out, _ := json.Marshal(m)
		return out
	}
}

// flipHex changes the last digit of a hex string.
func flipHex(s string) string {
	last := "0"
	if strings.HasSuffix(s, "0") {
		last = "1"
	}
	return s[:len(s)-1] + last
}

func TestBadConsistencyProof(t *testing.T) {
	tl := newTestLog(t, "")
	tl.appendLabels(t, 3)
	state := filepath.Join(t.TempDir(), "sth.json")
	mustPass(t, tl.srv.URL, state, audit.Options{})
	tl.appendLabels(t, 2)
	bad := tamper(t, tl.node.Handler(), pathIs("/api/v1/log/proof/consistency"), editJSON(t, func(m map[string]any) {
		p := m["proof"].([]any)
		p[0] = flipHex(p[0].(string))
	}))
	mustMisbehave(t, bad.URL, state, "consistency", audit.Options{})
	mustPass(t, tl.srv.URL, state, audit.Options{}) // the honest answer still passes
}

func TestForgedHead(t *testing.T) {
	tl := newTestLog(t, "")
	tl.appendLabels(t, 2)
	for name, edit := range map[string]func(map[string]any){
		"another root":             func(m map[string]any) { m["rootHash"] = flipHex(m["rootHash"].(string)) },
		"uppercase hex root":       func(m map[string]any) { m["rootHash"] = strings.ToUpper(m["rootHash"].(string)) },
		"short signature":          func(m map[string]any) { sig(m)["value"] = sig(m)["value"].(string)[:20] },
		"other method":             func(m map[string]any) { sig(m)["verificationMethod"] = "did:key:z6Mkother#z6Mkother" },
		"an extra member":          func(m map[string]any) { m["note"] = "hello" },
		"a member gone":            func(m map[string]any) { delete(m, "timestamp") },
		"a size of the wrong sort": func(m map[string]any) { m["treeSize"] = "2" },
	} {
		t.Run(name, func(t *testing.T) {
			bad := tamper(t, tl.node.Handler(), pathIs("/api/v1/log/sth"), editJSON(t, edit))
			mustMisbehave(t, bad.URL, filepath.Join(t.TempDir(), "sth.json"), "signature", audit.Options{})
		})
	}
}

// sig is the signature member of a decoded head.
func sig(m map[string]any) map[string]any { return m["signature"].(map[string]any) }

// TestAnswerThatIsNotATreeHead: JSON that is no histor.sth/v1 head at all (a proxy's error page)
// makes the audit incomplete, not a finding against the log; a head that parses but does not
// verify stays misbehaviour (TestForgedHead).
func TestAnswerThatIsNotATreeHead(t *testing.T) {
	tl := newTestLog(t, "")
	tl.appendLabels(t, 1)
	for name, body := range map[string]string{
		"proxy error page":  `{"error":"upstream timed out","status":504}`,
		"head without type": `{"log":"x","treeSize":1}`,
	} {
		t.Run(name, func(t *testing.T) {
			proxy := tamper(t, tl.node.Handler(), pathIs("/api/v1/log/sth"), func([]byte) []byte { return []byte(body) })
			_, err := runAudit(t, proxy.URL, "", audit.Options{})
			var inc *audit.IncompleteError
			if !errors.As(err, &inc) || audit.ExitCode(err) != 2 || !strings.Contains(err.Error(), "not a tree head") {
				t.Errorf("want an incomplete audit (exit 2) saying \"not a tree head\", got exit %d: %v", audit.ExitCode(err), err)
			}
		})
	}
}

func TestTamperedLabel(t *testing.T) {
	tl := newTestLog(t, "")
	tl.appendLabels(t, 3)
	id := tl.ids[1]
	bad := tamper(t, tl.node.Handler(), pathIs("/api/v1/labels/"+id), func(b []byte) []byte {
		return bytes.Replace(b, []byte(`"verdict":"pass"`), []byte(`"verdict":"fail"`), 1)
	})
	mustMisbehave(t, bad.URL, "", "label", audit.Options{LabelID: id})
}

func TestBadInclusionProof(t *testing.T) {
	tl := newTestLog(t, "")
	tl.appendLabels(t, 4)
	id := tl.ids[1]
	bad := tamper(t, tl.node.Handler(), pathIs("/api/v1/labels/"+id+"/proof"), editJSON(t, func(m map[string]any) {
		m["leafIndex"] = 2
	}))
	mustMisbehave(t, bad.URL, "", "label", audit.Options{LabelID: id})
}

func TestTamperedHashTile(t *testing.T) {
	tl := newTestLog(t, "")
	tl.appendLabels(t, 3)
	bad := tamper(t, tl.node.Handler(), pathIs("/log/tile/0/000.p/3"), func(b []byte) []byte {
		b[40] ^= 1
		return b
	})
	mustMisbehave(t, bad.URL, "", "tiles", audit.Options{Tiles: true})
}

func TestTamperedEntryBundle(t *testing.T) {
	tl := newTestLog(t, "")
	tl.appendLabels(t, 3)
	bad := tamper(t, tl.node.Handler(), pathIs("/log/tile/entries/000.p/3"), func(b []byte) []byte {
		b[len(b)-2] ^= 1
		return b
	})
	mustMisbehave(t, bad.URL, "", "tiles", audit.Options{Tiles: true})
}

func TestCheckpointFromAnotherKey(t *testing.T) {
	tl := newTestLog(t, "")
	other := newTestLog(t, "") // same origin, different key
	tl.appendLabels(t, 1)
	other.appendLabels(t, 1)
	forged := other.node.Log().Latest().Checkpoint
	bad := tamper(t, tl.node.Handler(), pathIs("/log/checkpoint"), func([]byte) []byte { return forged })
	mustMisbehave(t, bad.URL, "", "tiles", audit.Options{Tiles: true})
}

func TestUnreachableLogIsIncomplete(t *testing.T) {
	tl := newTestLog(t, "")
	url := tl.srv.URL
	tl.srv.Close()
	mustBeIncomplete(t, url, filepath.Join(t.TempDir(), "sth.json"), audit.Options{})
}

func TestServerErrorsAreIncomplete(t *testing.T) {
	tl := newTestLog(t, "")
	tl.appendLabels(t, 1)
	broken := tamper(t, tl.node.Handler(), pathIs("/api/v1/log/sth"), func([]byte) []byte { return []byte("{") })
	mustBeIncomplete(t, broken.URL, "", audit.Options{}) // 200 with unparsable JSON
	mustBeIncomplete(t, tl.srv.URL, "", audit.Options{LabelID: "urn:uuid:00000000-0000-4000-8000-000000000000"})
	mustBeIncomplete(t, "ftp://example.org", "", audit.Options{})
	huge := httptestServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Write(bytes.Repeat([]byte(" "), 2<<20))
	})
	mustBeIncomplete(t, huge, "", audit.Options{})
}

func TestDamagedStateIsIncomplete(t *testing.T) {
	tl := newTestLog(t, "")
	tl.appendLabels(t, 1)
	state := filepath.Join(t.TempDir(), "sth.json")
	mustPass(t, tl.srv.URL, state, audit.Options{})
	kept, _ := os.ReadFile(state)
	os.WriteFile(state, bytes.Replace(kept, []byte(`"treeSize":1`), []byte(`"treeSize":2`), 1), 0o644)
	mustBeIncomplete(t, tl.srv.URL, state, audit.Options{})
}

func TestCheckpointOlderThanTheHead(t *testing.T) {
	tl := newTestLog(t, "")
	tl.appendLabels(t, 3)
	older := tl.node.Log().Latest().Checkpoint
	tl.appendLabels(t, 2)
	lagging := tamper(t, tl.node.Handler(), pathIs("/log/checkpoint"), func([]byte) []byte { return older })
	rep := mustPass(t, lagging.URL, "", audit.Options{Tiles: true})
	if rep.TreeSize != 5 || rep.Tiles.CheckpointSize != 3 || rep.Tiles.Entries != 3 {
		t.Errorf("report %+v / %+v, want head 5 and the tiles read at the checkpoint's size 3", rep, rep.Tiles)
	}
}

func TestCheckpointOfAFork(t *testing.T) {
	a, b := forkedPair(t, 5, 3) // one key, different entries
	forked := b.node.Log().Latest().Checkpoint
	bad := tamper(t, a.node.Handler(), pathIs("/log/checkpoint"), func([]byte) []byte { return forked })
	mis := mustMisbehave(t, bad.URL, "", "tiles", audit.Options{Tiles: true})
	if !strings.Contains(mis.Reason, "not one tree") {
		t.Errorf("reason %q does not say the two heads are not one tree", mis.Reason)
	}
	mustHoldFork(t, mis, forked, a.node.Log().Latest().STH)
}

func TestLabelServedPrettyPrinted(t *testing.T) {
	tl := newTestLog(t, "")
	tl.appendLabels(t, 2)
	id := tl.ids[0]
	pretty := tamper(t, tl.node.Handler(), pathIs("/api/v1/labels/"+id), func(b []byte) []byte {
		var out bytes.Buffer
		if err := json.Indent(&out, b, "", "  "); err != nil {
			t.Errorf("indenting: %v", err)
		}
		return out.Bytes()
	})
	// The leaf is SHA-256(0x00 ‖ JCS(label)): any JSON form of the same document must pass.
	mustPass(t, pretty.URL, "", audit.Options{LabelID: id})
}

// HISTOR's Python auditor keeps json.dumps(sth): the same document with ", " and ": "
// separators. Our auditor must take over such a state file.
func TestStateWrittenByHISTORsAuditor(t *testing.T) {
	tl := newTestLog(t, "")
	tl.appendLabels(t, 2)
	state := filepath.Join(t.TempDir(), "sth.json")
	mustPass(t, tl.srv.URL, state, audit.Options{})
	kept, _ := os.ReadFile(state)
	python := strings.NewReplacer(`","`, `", "`, `":`, `": `, `,"`, `, "`).Replace(string(kept))
	if python == string(kept) {
		t.Fatal("the rewrite changed nothing")
	}
	os.WriteFile(state, []byte(python), 0o644)
	tl.appendLabels(t, 1)
	if rep := mustPass(t, tl.srv.URL, state, audit.Options{}); rep.Consistency != "ok (2 → 3)" {
		t.Errorf("consistency %q, want ok (2 → 3)", rep.Consistency)
	}
}

func TestTilesMaxLeavesBoundary(t *testing.T) {
	tl := newTestLog(t, "")
	tl.appendLabels(t, 3)
	mustPass(t, tl.srv.URL, "", audit.Options{Tiles: true, MaxTilesLeaves: 3})
	mustBeIncomplete(t, tl.srv.URL, "", audit.Options{Tiles: true, MaxTilesLeaves: 2})
}

// TestDeadlineBoundsTheWholeRun: a log answering slowly, each answer within the per-request
// timeout, is left after the deadline with an incomplete audit that says so.
func TestDeadlineBoundsTheWholeRun(t *testing.T) {
	slow := httptestServer(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(5 * time.Second):
		case <-r.Context().Done():
		}
		http.NotFound(w, r)
	})
	start := time.Now()
	_, err := runAudit(t, slow, "", audit.Options{Timeout: 10 * time.Second, Deadline: 200 * time.Millisecond})
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("the audit took %s with a deadline of 200ms", took)
	}
	if audit.ExitCode(err) != 2 || err == nil || !strings.Contains(err.Error(), "deadline of 200ms expired") {
		t.Errorf("want an incomplete audit (exit 2) naming the deadline, got exit %d: %v", audit.ExitCode(err), err)
	}
}

// TestNegativeTimeoutsAreRefused: a negative timeout would mean none at all to net/http.
func TestNegativeTimeoutsAreRefused(t *testing.T) {
	var requests atomic.Int64
	tl := newTestLog(t, "")
	counting := tamper(t, tl.node.Handler(), func(*http.Request) bool { requests.Add(1); return false }, nil)
	for _, opt := range []audit.Options{{Timeout: -time.Second}, {Deadline: -time.Second}} {
		if _, err := runAudit(t, counting.URL, "", opt); audit.ExitCode(err) != 2 {
			t.Errorf("options %+v: want exit 2, got %v", opt, err)
		}
	}
	if n := requests.Load(); n != 0 {
		t.Errorf("%d requests made with refused options", n)
	}
}
