package witness_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/mod/sumdb/note"

	"github.com/histor-observer/histor/internal/promset/promtest"
	"github.com/histor-observer/histor/log/awr"
	"github.com/histor-observer/histor/log/format"
	"github.com/histor-observer/histor/witness"
)

// TestCosignAcrossGrowth: a log not written here grows, and the witness cosigns each head
// from the one before with x/mod's proofs; x/mod's note.Open with torchwood's cosignature
// verifier accepts every answer.
func TestCosignAcrossGrowth(t *testing.T) {
	l := newTestLog(t, "example.test/log")
	tw := newWitness(t, l)
	prev := int64(0)
	for _, n := range []int64{1, 2, 3, 7, 8, 9, 100, 255, 256, 257, 1000, 1000} {
		res := tw.mustCosign(t, l.request(t, prev, n))
		if strings.Count(string(res.Body), "\n") != 1 || !strings.HasPrefix(string(res.Body), "\u2014 "+witnessName+" ") {
			t.Fatalf("answer is not one cosignature line: %q", res.Body)
		}
		checkCosigned(t, l, l.checkpoint(t, n), res.Body)
		st, ok, err := tw.Latest(l.origin)
		if err != nil || !ok || st.Size != uint64(n) || st.Root != l.root(t, n) {
			t.Fatalf("state after %d: %+v %v %v", n, st, ok, err)
		}
		prev = n
	}
}

func TestStatusCodes(t *testing.T) {
	l := newTestLog(t, "example.test/log")
	stranger := newTestLog(t, "example.test/other")
	impostor := newTestLog(t, l.origin) // the right name, another key
	tw := newWitness(t, l)
	tw.mustCosign(t, l.request(t, 0, 5))

	cp8 := l.checkpoint(t, 8)
	goodProof := l.proof(t, 5, 8)
	badProof := append([][32]byte(nil), goodProof...)
	badProof[0][0] ^= 1
	body := func(old uint64, proof [][32]byte, cp []byte) []byte {
		return witness.Request{Old: old, Proof: proof, Checkpoint: cp}.Marshal()
	}
	brokenSig := breakSignature(t, cp8)
	emptyText := fmt.Sprintf("%s\n0\n%s\n", l.origin, "47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=")
	badEmpty := l.signText(t, fmt.Sprintf("%s\n0\n%s\n", l.origin, "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="))
	extension := l.signText(t, strings.TrimSuffix(string(cp8[:bytes.Index(cp8, []byte("\n\n"))+1]), "")+"ext line\n")
	forked5 := l.fork().checkpoint(t, 5)
	tooMany := make([][32]byte, witness.MaxProofLines+1)

	for _, c := range []struct {
		name   string
		body   []byte
		status int
		answer string // the exact body, when the spec fixes it
	}{
		{"empty body", nil, 400, ""},
		{"no old line", cp8, 400, ""},
		{"old with a leading zero", []byte("old 05\n" + string(body(5, goodProof, cp8))[6:]), 400, ""},
		{"old with a sign", []byte("old +5\n\n" + string(cp8)), 400, ""},
		{"proof line not base64", []byte("old 5\n!!!!\n\n" + string(cp8)), 400, ""},
		{"proof line of 31 bytes", []byte("old 5\nAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA==\n\n" + string(cp8)), 400, ""},
		{"64 proof lines", body(5, tooMany, cp8), 400, ""},
		{"no empty line", []byte("old 5\n" + string(cp8[:bytes.Index(cp8, []byte("\n"))])), 400, ""},
		{"no checkpoint", []byte("old 5\n\n"), 400, ""},
		{"old above the size", body(9, nil, cp8), 400, ""},
		{"extension line", body(5, goodProof, extension), 400, ""},
		{"unknown origin", stranger.request(t, 0, 3), 404, ""},
		{"signed by another key", impostor.request(t, 5, 8), 403, ""},
		{"the log's signature broken", body(5, goodProof, brokenSig), 403, ""},
		{"old below the cosigned size", body(3, l.proof(t, 3, 8), cp8), 409, "5\n"},
		{"old 0 after cosigning", body(0, nil, cp8), 409, "5\n"},
		{"proof does not verify", body(5, badProof, cp8), 422, ""},
		{"proof too short", body(5, goodProof[1:], cp8), 422, ""},
		{"same size, other root", body(5, nil, forked5), 422, ""},
		{"same size, a proof", body(5, goodProof, l.checkpoint(t, 5)), 422, ""},
		{"cosigned again", body(5, nil, l.checkpoint(t, 5)), 200, ""},
		{"extended", body(5, goodProof, cp8), 200, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			res := tw.submit(t, c.body)
			if res.Status != c.status {
				t.Fatalf("status %d (%s: %s), want %d", res.Status, res.Outcome, res.Reason, c.status)
			}
			if c.answer != "" && string(res.Body) != c.answer {
				t.Fatalf("body %q, want %q", res.Body, c.answer)
			}
			if w := awr.ForbiddenWord(string(res.Body)); w != "" {
				t.Fatalf("answer %q says %q", res.Body, w)
			}
			if got := strings.Contains(string(res.Body), "\u2014"); got != (c.status == 200) {
				t.Fatalf("signature line in a %d answer: %q", c.status, res.Body)
			}
		})
	}
	for result, want := range map[string]float64{"malformed": 11, "bad_signature": 2, "unknown_log": 1,
		"conflict": 2, "inconsistent": 4, "cosigned": 3, "error": 0} {
		if got := promtest.Sum(t, tw.reg, "histor_witness_add_checkpoint_requests_total", "result", result); got != want {
			t.Errorf("requests with result %s: %v, want %v", result, got, want)
		}
	}
	// A fresh witness: the empty tree, then the spec's two checks about size 0.
	fresh := newWitness(t, l)
	for _, c := range []struct {
		name   string
		body   []byte
		status int
	}{
		{"size 0, other root", body(0, nil, badEmpty), 422},
		{"proof from size 0", body(0, goodProof, cp8), 422},
		{"old above nothing", body(5, goodProof, cp8), 409},
		{"empty tree", body(0, nil, l.signText(t, emptyText)), 200},
		{"first real head", body(0, nil, cp8), 200},
	} {
		if res := fresh.submit(t, c.body); res.Status != c.status {
			t.Errorf("%s: status %d (%s), want %d", c.name, res.Status, res.Reason, c.status)
		}
	}
}

// TestSpecExamples parses the example request of c2sp.org/tlog-witness; this witness does not
// know that log (404), nor its key when it knows its name (403).
func TestSpecExamples(t *testing.T) {
	const example = "old 20852014\n" +
		"PlRNCrwHpqhGrupue0L7gxbjbMiKA9temvuZZDDpkaw=\n" +
		"jrJZDmY8Y7SyJE0MWLpLozkIVMSMZcD5kvuKxPC3swk=\n" +
		"5+pKlUdi2LeF/BcMHBn+Ku6yhPGNCswZZD1X/6QgPd8=\n" +
		"/6WVhPs2CwSsb5rYBH5cjHV/wSmA79abXAwhXw3Kj/0=\n" +
		"\n" +
		"example.com/behind-the-sofa\n" +
		"20852163\n" +
		"CsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n" +
		"\n" +
		"\u2014 example.com/behind-the-sofa Az3grlgtzPICa5OS8npVmf1Myq/5IZniMp+ZJurmRDeOoRDe4URYN7u5/Zhcyv2q1gGzGku9nTo+zyWE+xeMcTOAYQ8=\n" +
		"\u2014 example.com/behind-the-sofa opLqBQsREYCgu6xQkYQwJr9fo45a62DN9EdmHXnZdXNqlcVGlCum2Wks+49/V6267UEjw6QUXTS5Rovnzv++qbSzm9Q=\n"
	r, err := witness.ParseRequest([]byte(example))
	if err != nil {
		t.Fatal(err)
	}
	if r.Old != 20852014 || len(r.Proof) != 4 || !bytes.HasPrefix(r.Checkpoint, []byte("example.com/behind-the-sofa\n20852163\n")) {
		t.Fatalf("parsed %+v", r)
	}
	if string(r.Marshal()) != example {
		t.Fatal("the example does not re-encode to itself")
	}
	if res := newWitness(t).submit(t, []byte(example)); res.Status != 404 {
		t.Fatalf("unknown log: status %d", res.Status)
	}
	sofa := newTestLog(t, "example.com/behind-the-sofa")
	if res := newWitness(t, sofa).submit(t, []byte(example)); res.Status != 403 {
		t.Fatalf("a log known by another key: status %d (%s)", res.Status, res.Reason)
	}
	// The spec's example answer is not used as a vector: its lines' time fields exceed
	// 2^63-1, so they are placeholders rather than cosignature/v1 signatures.
}

// TestRollbackRefusedWithEvidence: after 10 and 20, the log signs another tree's head at 10.
// It is refused whatever old size it comes with, and the two heads at 10 are a bundle that
// verifies offline with the log's key alone.
func TestRollbackRefusedWithEvidence(t *testing.T) {
	l := newTestLog(t, "example.test/log")
	tw := newWitness(t, l)
	tw.mustCosign(t, l.request(t, 0, 10))
	tw.mustCosign(t, l.request(t, 10, 20))

	replay := tw.submit(t, witness.Request{Old: 10, Checkpoint: l.checkpoint(t, 10)}.Marshal())
	if replay.Status != 409 || string(replay.Body) != "20\n" || replay.ContentType != witness.ContentTypeSize || replay.Evidence != nil {
		t.Fatalf("replay of 10: %d %q %q evidence %v", replay.Status, replay.Body, replay.ContentType, replay.Evidence != nil)
	}
	forked := l.fork()
	res := tw.submit(t, witness.Request{Old: 10, Checkpoint: forked.checkpoint(t, 10)}.Marshal())
	if res.Status != 409 || string(res.Body) != "20\n" {
		t.Fatalf("rollback: %d %q", res.Status, res.Body)
	}
	if res.Evidence == nil || res.Evidence.Kind != format.EquivocationSameSize || len(tw.evidence) != 1 {
		t.Fatalf("rollback left evidence %+v, announced %d", res.Evidence, len(tw.evidence))
	}
	e := checkOffline(t, l, res.Evidence.Bundle)
	if e.A.Size != 10 || e.B.Size != 10 {
		t.Fatalf("bundle of sizes %d and %d", e.A.Size, e.B.Size)
	}
	if res := tw.submit(t, witness.Request{Old: 20, Checkpoint: forked.checkpoint(t, 10)}.Marshal()); res.Status != 400 {
		t.Fatalf("rollback with old 20: %d", res.Status)
	}
	if st, _, _ := tw.Latest(l.origin); st.Size != 20 || st.Root != l.root(t, 20) {
		t.Fatalf("state rolled to %d", st.Size)
	}
}

// checkOffline verifies a bundle with nothing but the log's verifier and format.
func checkOffline(t testing.TB, l *testLog, bundle []byte) *format.Equivocation {
	t.Helper()
	e, err := format.VerifyEquivocation(bundle, l.verifier)
	if err != nil {
		t.Fatalf("bundle does not verify offline: %v", err)
	}
	return e
}

// TestForkRefusedWithEvidence: at the cosigned size with another root (422, conclusive), and
// beyond it with the fork's own proof, which cannot start from the cosigned root (422, a
// failed-proof claim). A proof of the wrong length is refused without a bundle; the same fork
// twice is one bundle, announced once.
func TestForkRefusedWithEvidence(t *testing.T) {
	l := newTestLog(t, "example.test/log")
	forked := l.fork()
	tw := newWitness(t, l)
	tw.mustCosign(t, l.request(t, 0, 20))

	same := witness.Request{Old: 20, Checkpoint: forked.checkpoint(t, 20)}.Marshal()
	res := tw.submit(t, same)
	if res.Status != 422 || res.Evidence == nil || res.Evidence.Kind != format.EquivocationSameSize {
		t.Fatalf("same-size fork: %d, evidence %+v", res.Status, res.Evidence)
	}
	checkOffline(t, l, res.Evidence.Bundle)
	again := tw.submit(t, same)
	if again.Status != 422 || again.Evidence == nil || again.Evidence.ID != res.Evidence.ID || len(tw.evidence) != 1 {
		t.Fatalf("the fork again: %d, %d announced", again.Status, len(tw.evidence))
	}

	ahead := witness.Request{Old: 20, Proof: forked.proof(t, 20, 30), Checkpoint: forked.checkpoint(t, 30)}
	res = tw.submit(t, ahead.Marshal())
	if res.Status != 422 || res.Evidence == nil || res.Evidence.Kind != format.EquivocationFailedProof {
		t.Fatalf("fork ahead: %d, evidence %+v", res.Status, res.Evidence)
	}
	e := checkOffline(t, l, res.Evidence.Bundle)
	if e.A.Size != 20 || e.B.Size != 30 || e.A.Root != l.root(t, 20) {
		t.Fatalf("bundle %d→%d", e.A.Size, e.B.Size)
	}
	ahead.Proof = ahead.Proof[1:]
	if res := tw.submit(t, ahead.Marshal()); res.Status != 422 || res.Evidence != nil {
		t.Fatalf("short proof: %d, evidence %v", res.Status, res.Evidence != nil)
	}

	all, err := tw.ListEvidence()
	if err != nil || len(all) != 2 || len(tw.evidence) != 2 {
		t.Fatalf("%d bundles held (%v), %d announced", len(all), err, len(tw.evidence))
	}
	for _, ev := range tw.evidence {
		got, err := tw.GetEvidence(ev.ID)
		if err != nil || !bytes.Equal(got.Bundle, ev.Bundle) || got.Origin != l.origin || !got.Seen.Equal(testNow) {
			t.Fatalf("get %s: %+v %v", ev.ID, got, err)
		}
	}
	if _, err := tw.GetEvidence(strings.Repeat("0", 64)); !errors.Is(err, witness.ErrNotFound) {
		t.Fatalf("unknown id: %v", err)
	}
	if st, _, _ := tw.Latest(l.origin); st.Size != 20 || st.Root != l.root(t, 20) {
		t.Fatalf("state moved to %d", st.Size)
	}
	if got := promtest.Sum(t, tw.reg, "histor_witness_forks_total"); got != 2 {
		t.Fatalf("forks_total %v", got)
	}
}

// TestStateSurvivesReopen: the size cosigned is on disk, and after a reopen nothing smaller
// or forked is cosigned.
func TestStateSurvivesReopen(t *testing.T) {
	l := newTestLog(t, "example.test/log")
	tw := newWitness(t, l)
	tw.mustCosign(t, l.request(t, 0, 10))
	tw.submit(t, witness.Request{Old: 10, Checkpoint: l.fork().checkpoint(t, 10)}.Marshal())
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := tw.AddCheckpoint(context.Background(), l.request(t, 10, 12)); !errors.Is(err, witness.ErrClosed) {
		t.Fatalf("after close: %v", err)
	}
	tw = openWitness(t, tw.dir, l)
	st, ok, err := tw.Latest(l.origin)
	if err != nil || !ok || st.Size != 10 {
		t.Fatalf("reopened state %+v %v %v", st, ok, err)
	}
	checkCosigned(t, l, st.Checkpoint[:0], st.Checkpoint)
	for _, body := range [][]byte{l.request(t, 0, 10), l.request(t, 5, 5), l.request(t, 0, 3)} {
		if res := tw.submit(t, body); res.Status != 409 || string(res.Body) != "10\n" {
			t.Fatalf("after reopen: %d %q", res.Status, res.Body)
		}
	}
	if all, _ := tw.ListEvidence(); len(all) != 1 {
		t.Fatalf("%d bundles after reopen", len(all))
	}
	tw.mustCosign(t, l.request(t, 10, 40))
}

// TestFailedWriteShowsNoCosignature: the cosignature is made before the write, but shown only
// after it; when the write fails the answer is 500, and the witness writes nothing more until
// it is reopened, when the state is the one before the failed write.
func TestFailedWriteShowsNoCosignature(t *testing.T) {
	l := newTestLog(t, "example.test/log")
	tw := newWitness(t, l)
	tw.mustCosign(t, l.request(t, 0, 4))
	heal := witness.FailCommits(tw.Witness)
	res, err := tw.AddCheckpoint(context.Background(), l.request(t, 4, 9))
	if !errors.Is(err, witness.ErrInjected) || res.Status != 500 || res.Outcome != witness.OutcomeError {
		t.Fatalf("failed write: %d %v", res.Status, err)
	}
	if bytes.Contains(res.Body, []byte(witnessName)) || bytes.Contains(res.Body, []byte("\u2014")) {
		t.Fatalf("a failed write answered %q", res.Body)
	}
	if st, _, _ := tw.Latest(l.origin); st.Size != 4 {
		t.Fatalf("state %d after a failed write", st.Size)
	}
	heal()
	res, err = tw.AddCheckpoint(context.Background(), l.request(t, 4, 9))
	if !errors.Is(err, witness.ErrStopped) || res.Status != 500 {
		t.Fatalf("after a failed write: %d %v", res.Status, err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	tw = openWitness(t, tw.dir, l)
	if res := tw.submit(t, l.request(t, 9, 12)); res.Status != 409 || string(res.Body) != "4\n" {
		t.Fatalf("the failed size counted: %d %q", res.Status, res.Body)
	}
	tw.mustCosign(t, l.request(t, 4, 9))
	if got := promtest.Sum(t, tw.reg, "histor_witness_cosignatures_total"); got != 1 {
		t.Fatalf("cosignatures_total %v", got)
	}
}

// TestRacingSubmissions: rounds of two submissions from the same cosigned size, one to +1 and
// one to +2, at once. Exactly one is cosigned, the other is told the winner's size, and the
// state is the winner's: never both, never a rollback.
func TestRacingSubmissions(t *testing.T) {
	l := newTestLog(t, "example.test/log")
	tw := newWitness(t, l)
	size := int64(1)
	tw.mustCosign(t, l.request(t, 0, size))
	for round := 0; round < 60; round++ {
		bodies := [][]byte{l.request(t, size, size+1), l.request(t, size, size+2)}
		results := make([]witness.Result, 2)
		var wg sync.WaitGroup
		for i := range bodies {
			wg.Go(func() { results[i] = tw.submit(t, bodies[i]) })
		}
		wg.Wait()
		var won int64
		for i, r := range results {
			if r.Status == 200 {
				if won != 0 {
					t.Fatalf("round %d: both cosigned", round)
				}
				won = size + 1 + int64(i)
			}
		}
		if won == 0 {
			t.Fatalf("round %d: neither cosigned: %d %d", round, results[0].Status, results[1].Status)
		}
		for i, r := range results {
			if size+1+int64(i) != won && (r.Status != 409 || string(r.Body) != fmt.Sprintf("%d\n", won)) {
				t.Fatalf("round %d: the loser got %d %q, winner %d", round, r.Status, r.Body, won)
			}
		}
		if st, _, _ := tw.Latest(l.origin); st.Size != uint64(won) {
			t.Fatalf("round %d: state %d, winner %d", round, st.Size, won)
		}
		size = won
	}
}

// TestConcurrentClients: clients that follow the spec's protocol (start from old 0, take the
// size a 409 gives) push one log's heads at once. Every size is cosigned at most once and the
// state ends at the largest cosigned: the state only ever grew.
func TestConcurrentClients(t *testing.T) {
	l := newTestLog(t, "example.test/log")
	l.growTo(t, 64)
	tw := newWitness(t, l)
	var mu sync.Mutex
	cosigned := map[int64]int{}
	var wg sync.WaitGroup
	for c := int64(0); c < 4; c++ {
		wg.Go(func() {
			known := int64(0)
			for target := c + 1; target <= 64; target += 4 {
				for known < target {
					res, err := tw.AddCheckpoint(context.Background(), l.requestLocked(&mu, t, known, target))
					if err != nil {
						t.Error(err)
						return
					}
					if res.Status == 200 {
						mu.Lock()
						cosigned[target]++
						mu.Unlock()
						known = target
					} else if res.Status == 409 {
						fmt.Sscan(string(res.Body), &known)
					} else {
						t.Errorf("client %d, %d→%d: %d %s", c, known, target, res.Status, res.Reason)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	largest := int64(0)
	for size, n := range cosigned {
		if n != 1 {
			t.Errorf("size %d cosigned %d times", size, n)
		}
		largest = max(largest, size)
	}
	if st, _, _ := tw.Latest(l.origin); int64(st.Size) != largest || largest == 0 {
		t.Fatalf("state %d, largest cosigned %d", st.Size, largest)
	}
}

// TestWaitingForTheTurnEnds: a request whose context ends while another holds the log's
// turn gives up without an answer.
func TestWaitingForTheTurnEnds(t *testing.T) {
	l := newTestLog(t, "example.test/log")
	tw := newWitness(t, l)
	release := witness.HoldTurn(tw.Witness, l.origin)
	defer release()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res, err := tw.AddCheckpoint(ctx, l.request(t, 0, 3))
	if !errors.Is(err, context.Canceled) || res.Status != 500 {
		t.Fatalf("%d %v", res.Status, err)
	}
}

// TestMangledBody flips bits of every byte of a valid body in turn: nothing it makes is
// cosigned or moves the state, and the original is cosigned after.
func TestMangledBody(t *testing.T) {
	l := newTestLog(t, "example.test/log")
	tw := newWitness(t, l)
	tw.mustCosign(t, l.request(t, 0, 6))
	body := l.request(t, 6, 13)
	for i := range body {
		for _, x := range []byte{0x01, 0x40} {
			m := bytes.Clone(body)
			m[i] ^= x
			if res := tw.submit(t, m); res.Status == 200 {
				t.Fatalf("byte %d ^ %#x (%q) cosigned", i, x, m[i])
			}
		}
	}
	for _, m := range [][]byte{body[:len(body)-1], append(bytes.Clone(body), '\n'), body[1:], append([]byte("\n"), body...)} {
		if res := tw.submit(t, m); res.Status == 200 {
			t.Fatalf("%q cosigned", m)
		}
	}
	if st, _, _ := tw.Latest(l.origin); st.Size != 6 {
		t.Fatalf("state moved to %d", st.Size)
	}
	tw.mustCosign(t, body)
}

func TestAddLog(t *testing.T) {
	l := newTestLog(t, "example.test/log")
	tw := newWitness(t)
	if res := tw.submit(t, l.request(t, 0, 2)); res.Status != 404 {
		t.Fatalf("before AddLog: %d", res.Status)
	}
	if err := tw.AddLog(l.verifier); err != nil {
		t.Fatal(err)
	}
	if err := tw.AddLog(l.verifier); err != nil {
		t.Fatalf("adding the same log again: %v", err)
	}
	if err := tw.AddLog(newTestLog(t, l.origin).verifier); err == nil {
		t.Fatal("added a second key for one origin")
	}
	tw.mustCosign(t, l.request(t, 0, 2))
	if got := tw.Logs(); len(got) != 1 || got[0] != l.origin {
		t.Fatalf("logs %v", got)
	}
}

// TestAddEvidence: a bundle one witness made is checked and kept by another, once.
func TestAddEvidence(t *testing.T) {
	l := newTestLog(t, "example.test/log")
	a := newWitness(t, l)
	a.mustCosign(t, l.request(t, 0, 7))
	res := a.submit(t, witness.Request{Old: 7, Checkpoint: l.fork().checkpoint(t, 7)}.Marshal())
	if res.Evidence == nil {
		t.Fatal("no evidence")
	}
	b := newWitness(t, l)
	ev, fresh, err := b.AddEvidence(res.Evidence.Bundle)
	if err != nil || !fresh || ev.ID != res.Evidence.ID {
		t.Fatalf("add: %+v %v %v", ev, fresh, err)
	}
	if _, fresh, err := b.AddEvidence(res.Evidence.Bundle); err != nil || fresh {
		t.Fatalf("add again: fresh %v, %v", fresh, err)
	}
	if len(b.evidence) != 0 {
		t.Fatal("AddEvidence announced the bundle")
	}
	mangled := bytes.Clone(res.Evidence.Bundle)
	mangled[len(mangled)-10] ^= 1
	if _, _, err := b.AddEvidence(mangled); err == nil {
		t.Fatal("added a mangled bundle")
	}
	if _, _, err := newWitness(t).AddEvidence(res.Evidence.Bundle); err == nil {
		t.Fatal("added a bundle about an unknown log")
	}
}

func TestConfigRefused(t *testing.T) {
	l := newTestLog(t, "example.test/log")
	dir := t.TempDir()
	for _, c := range []witness.Config{
		{Name: witnessName, Key: witnessKey()},
		{Dir: dir, Name: "bad name", Key: witnessKey()},
		{Dir: dir, Name: witnessName},
		{Dir: dir, Name: witnessName, Key: witnessKey(), Logs: map[string]note.Verifier{"other.test/log": l.verifier}},
	} {
		if w, err := witness.New(c); err == nil {
			w.Close()
			t.Errorf("accepted %+v", c)
		}
	}
}

// breakSignature flips a bit of the Ed25519 signature in a note's one signature line, keeping
// the line well formed and its key name and ID.
func breakSignature(t testing.TB, msg []byte) []byte {
	t.Helper()
	i := bytes.LastIndex(msg, []byte(" ")) + 1
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSuffix(string(msg[i:]), "\n"))
	if err != nil {
		t.Fatal(err)
	}
	raw[10] ^= 1
	return append(bytes.Clone(msg[:i]), base64.StdEncoding.EncodeToString(raw)+"\n"...)
}

// TestReopenOverOneRegistry: a witness closed and opened again over the same registry
// registers its series anew, as a node restarted in one process does.
func TestReopenOverOneRegistry(t *testing.T) {
	l := newTestLog(t, "example.com/reopened")
	dir := filepath.Join(t.TempDir(), "witness")
	reg := prometheus.NewRegistry()
	for range 2 {
		w, err := witness.New(witness.Config{Dir: dir, Name: witnessName, Key: witnessKey(),
			Logs: map[string]note.Verifier{l.origin: l.verifier}, Registerer: reg})
		if err != nil {
			t.Fatalf("opening over a registry a closed witness used: %v", err)
		}
		if got := promtest.Sum(t, reg, "histor_witness_stopped"); got != 0 {
			t.Fatalf("histor_witness_stopped = %v", got)
		}
		w.Close()
	}
}
