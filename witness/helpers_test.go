package witness_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"filippo.io/torchwood"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/histor-observer/histor/witness"
)

const witnessName = "witness.test/w1"

// testNow is the fixed time every test witness cosigns at.
var testNow = time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)

func witnessKey() ed25519.PrivateKey { return ed25519.NewKeyFromSeed(bytes.Repeat([]byte{7}, 32)) }

// testLog is a log not written here: tree hashes from x/mod's tlog, checkpoints written by
// hand from the tlog-checkpoint spec and signed with x/mod's note signer.
type testLog struct {
	origin   string
	signer   note.Signer
	verifier note.Verifier
	salt     byte // leaves differ between logs of different salt: a fork
	stored   []tlog.Hash
	n        int64
}

func newTestLog(t testing.TB, origin string) *testLog {
	t.Helper()
	skey, vkey, err := note.GenerateKey(rand.Reader, origin)
	if err != nil {
		t.Fatal(err)
	}
	s, err := note.NewSigner(skey)
	if err != nil {
		t.Fatal(err)
	}
	v, err := note.NewVerifier(vkey)
	if err != nil {
		t.Fatal(err)
	}
	return &testLog{origin: origin, signer: s, verifier: v}
}

// fork is a log under the same key whose leaves all differ from l's.
func (l *testLog) fork() *testLog {
	return &testLog{origin: l.origin, signer: l.signer, verifier: l.verifier, salt: l.salt + 1}
}

func (l *testLog) ReadHashes(indexes []int64) ([]tlog.Hash, error) {
	out := make([]tlog.Hash, len(indexes))
	for i, x := range indexes {
		out[i] = l.stored[x]
	}
	return out, nil
}

func (l *testLog) growTo(t testing.TB, n int64) {
	t.Helper()
	for ; l.n < n; l.n++ {
		h, err := tlog.StoredHashes(l.n, []byte(fmt.Sprintf("entry %d of %d", l.n, l.salt)), l)
		if err != nil {
			t.Fatal(err)
		}
		l.stored = append(l.stored, h...)
	}
}

func (l *testLog) root(t testing.TB, n int64) tlog.Hash {
	t.Helper()
	l.growTo(t, n)
	h, err := tlog.TreeHash(n, l)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func (l *testLog) signText(t testing.TB, text string) []byte {
	t.Helper()
	msg, err := note.Sign(&note.Note{Text: text}, l.signer)
	if err != nil {
		t.Fatal(err)
	}
	return msg
}

func (l *testLog) checkpoint(t testing.TB, n int64) []byte {
	t.Helper()
	r := l.root(t, n)
	return l.signText(t, fmt.Sprintf("%s\n%d\n%s\n", l.origin, n, base64.StdEncoding.EncodeToString(r[:])))
}

func (l *testLog) proof(t testing.TB, m, n int64) [][32]byte {
	t.Helper()
	l.growTo(t, n)
	p, err := tlog.ProveTree(n, m, l)
	if err != nil {
		t.Fatal(err)
	}
	out := make([][32]byte, len(p))
	for i := range p {
		out[i] = p[i]
	}
	return out
}

// request is the add-checkpoint body from m to n.
func (l *testLog) request(t testing.TB, m, n int64) []byte {
	t.Helper()
	var proof [][32]byte
	if m > 0 {
		proof = l.proof(t, m, n)
	}
	return witness.Request{Old: uint64(m), Proof: proof, Checkpoint: l.checkpoint(t, n)}.Marshal()
}

type testWitness struct {
	*witness.Witness
	dir      string
	reg      *prometheus.Registry
	evidence []witness.Evidence
}

func openWitness(t testing.TB, dir string, logs ...*testLog) *testWitness {
	t.Helper()
	tw := &testWitness{dir: dir, reg: prometheus.NewRegistry()}
	m := map[string]note.Verifier{}
	for _, l := range logs {
		m[l.origin] = l.verifier
	}
	w, err := witness.New(witness.Config{
		Dir: dir, Name: witnessName, Key: witnessKey(), Logs: m,
		Clock:      func() time.Time { return testNow },
		Registerer: tw.reg,
		OnEvidence: func(e witness.Evidence) { tw.evidence = append(tw.evidence, e) },
	})
	if err != nil {
		t.Fatal(err)
	}
	tw.Witness = w
	t.Cleanup(func() { w.Close() })
	return tw
}

func newWitness(t testing.TB, logs ...*testLog) *testWitness {
	t.Helper()
	return openWitness(t, filepath.Join(t.TempDir(), "witness"), logs...)
}

func (tw *testWitness) submit(t testing.TB, body []byte) witness.Result {
	t.Helper()
	res, err := tw.AddCheckpoint(context.Background(), body)
	if err != nil {
		t.Fatalf("add-checkpoint: %v", err)
	}
	return res
}

// mustCosign submits body and fails unless it is cosigned.
func (tw *testWitness) mustCosign(t testing.TB, body []byte) witness.Result {
	t.Helper()
	res := tw.submit(t, body)
	if res.Status != 200 {
		t.Fatalf("status %d (%s): %s", res.Status, res.Outcome, res.Body)
	}
	return res
}

// torchwoodVerifier checks the witness's cosignatures with torchwood's code, not ours.
func torchwoodVerifier(t testing.TB) note.Verifier {
	t.Helper()
	s, err := torchwood.NewCosignatureSigner(witnessName, witnessKey())
	if err != nil {
		t.Fatal(err)
	}
	return s.Verifier()
}

// checkCosigned opens the checkpoint with the witness's answer appended, as a client does,
// with x/mod's note.Open, the log's verifier and torchwood's cosignature verifier.
func checkCosigned(t testing.TB, l *testLog, checkpoint, answer []byte) {
	t.Helper()
	n, err := note.Open(append(bytes.Clone(checkpoint), answer...), note.VerifierList(l.verifier, torchwoodVerifier(t)))
	if err != nil {
		t.Fatalf("opening the cosigned checkpoint: %v", err)
	}
	var names []string
	for _, s := range n.Sigs {
		names = append(names, s.Name)
		if s.Name == witnessName {
			ts, err := torchwood.CosignatureTimestamp(s)
			if err != nil || ts != testNow.Unix() {
				t.Fatalf("cosignature time %d (%v), want %d", ts, err, testNow.Unix())
			}
		}
	}
	if len(n.Sigs) != 2 || names[1] != witnessName && names[0] != witnessName {
		t.Fatalf("verified signatures by %v", names)
	}
}

// requestLocked is request for concurrent callers: the tree is grown already, but x/mod's
// prover and signer are called under mu to keep the test log's own state simple.
func (l *testLog) requestLocked(mu *sync.Mutex, t testing.TB, m, n int64) []byte {
	mu.Lock()
	defer mu.Unlock()
	return l.request(t, m, n)
}
