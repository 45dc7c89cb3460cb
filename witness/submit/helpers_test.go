package submit_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/histor-observer/histor/log/format"
	"github.com/histor-observer/histor/log/keys"
	"github.com/histor-observer/histor/witness/submit"
)

const testOrigin = "histor.test/log"

func logKey() ed25519.PrivateKey { return ed25519.NewKeyFromSeed(bytes.Repeat([]byte{1}, 32)) }

func logPub() ed25519.PublicKey { return logKey().Public().(ed25519.PublicKey) }

// testLog is an in-memory tree built with x/mod's tlog, signing checkpoints with logKey.
// Logs with different salts share no leaf, so two of them are forks of each other.
type testLog struct {
	t      testing.TB
	salt   byte
	stored []tlog.Hash
	n      int64
}

func newTestLog(t testing.TB, salt byte) *testLog { return &testLog{t: t, salt: salt} }

func (l *testLog) grow(k int) *testLog {
	l.t.Helper()
	for range k {
		hashes, err := tlog.StoredHashes(l.n, []byte{byte(l.n), byte(l.n >> 8), l.salt}, l)
		if err != nil {
			l.t.Fatal(err)
		}
		l.stored = append(l.stored, hashes...)
		l.n++
	}
	return l
}

func (l *testLog) ReadHashes(indexes []int64) ([]tlog.Hash, error) {
	out := make([]tlog.Hash, len(indexes))
	for i, x := range indexes {
		out[i] = l.stored[x]
	}
	return out, nil
}

func (l *testLog) head() format.Checkpoint {
	l.t.Helper()
	root, err := tlog.TreeHash(l.n, l)
	if err != nil {
		l.t.Fatal(err)
	}
	return format.Checkpoint{Origin: testOrigin, Size: uint64(l.n), Root: root}
}

// checkpoint is the signed checkpoint of the tree as it is now.
func (l *testLog) checkpoint() []byte {
	l.t.Helper()
	s, err := keys.NoteSigner(testOrigin, logKey())
	if err != nil {
		l.t.Fatal(err)
	}
	cp, err := format.SignCheckpoint(s, l.head())
	if err != nil {
		l.t.Fatal(err)
	}
	return cp
}

func (l *testLog) proof(old, new uint64) ([][32]byte, error) {
	p, err := tlog.ProveTree(int64(new), int64(old), l)
	if err != nil {
		return nil, err
	}
	out := make([][32]byte, len(p))
	for i := range p {
		out[i] = p[i]
	}
	return out, nil
}

// testWitness is a small c2sp.org/tlog-witness add-checkpoint handler for the test log,
// written here so the Submitter can be tested against each answer the spec defines.
type testWitness struct {
	name string
	priv ed25519.PrivateKey
	host string // the host name the in-memory transport routes to it

	mu sync.Mutex
	// sameSizeStatus answers a same-size submission with another root: 422 (the
	// current spec) or 409 (tlog-witness v1.0.0).
	sameSizeStatus int
	size           uint64
	root           [32]byte
	delay          time.Duration                              // slept before answering
	script         []func(http.ResponseWriter, *http.Request) // answers served first, one per request
	bodies         [][]byte                                   // every request body, in order
	extraLines     []string                                   // appended to a 200 answer
}

func newTestWitness(i int) *testWitness {
	return &testWitness{
		name:           fmt.Sprintf("w%d.test/witness", i),
		priv:           ed25519.NewKeyFromSeed(bytes.Repeat([]byte{byte(10 + i)}, 32)),
		host:           fmt.Sprintf("w%d.test", i),
		sameSizeStatus: http.StatusUnprocessableEntity,
		root:           format.EmptyRoot(),
	}
}

func (w *testWitness) cosigner(t testing.TB) format.Cosigner {
	t.Helper()
	c, err := format.NewCosigner(w.name, w.priv.Public().(ed25519.PublicKey))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func (w *testWitness) vkey(t testing.TB) string {
	t.Helper()
	v, err := keys.CosignatureVerifierKey(w.name, w.priv.Public().(ed25519.PublicKey))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// witness is w as the Submitter is configured with it, reached at base.
func (w *testWitness) witness(t testing.TB, base string) submit.Witness {
	t.Helper()
	sw, err := submit.ParseWitness(base + "=" + w.vkey(t))
	if err != nil {
		t.Fatal(err)
	}
	return sw
}

func (w *testWitness) requests() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.bodies)
}

func (w *testWitness) state() (uint64, [32]byte) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.size, w.root
}

// setState makes the witness have cosigned c already.
func (w *testWitness) setState(c format.Checkpoint) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.size, w.root = c.Size, c.Root
}

func (w *testWitness) push(answers ...func(http.ResponseWriter, *http.Request)) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.script = append(w.script, answers...)
}

func (w *testWitness) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	body := readAll(r)
	w.mu.Lock()
	w.bodies = append(w.bodies, body)
	var scripted func(http.ResponseWriter, *http.Request)
	if len(w.script) > 0 {
		scripted, w.script = w.script[0], w.script[1:]
	}
	delay := w.delay
	w.mu.Unlock()
	if delay > 0 {
		time.Sleep(delay)
	}
	if scripted != nil {
		scripted(rw, r)
		return
	}
	if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/add-checkpoint") {
		http.Error(rw, "not found", http.StatusNotFound)
		return
	}
	status, answer, ctype := w.addCheckpoint(body)
	rw.Header().Set("Content-Type", ctype)
	rw.WriteHeader(status)
	rw.Write([]byte(answer))
}

func readAll(r *http.Request) []byte {
	var b bytes.Buffer
	b.ReadFrom(r.Body)
	return b.Bytes()
}

// addCheckpoint checks a request as the spec orders: body shape, log signature, old size,
// proof; then it moves its state and cosigns, all under one lock.
func (w *testWitness) addCheckpoint(body []byte) (int, string, string) {
	head, cp, ok := bytes.Cut(body, []byte("\n\n"))
	lines := strings.Split(string(head), "\n")
	oldText, ok2 := strings.CutPrefix(lines[0], "old ")
	old, err := strconv.ParseUint(oldText, 10, 64)
	if !ok || !ok2 || err != nil {
		return http.StatusBadRequest, "bad body\n", "text/plain"
	}
	var proof [][32]byte
	for _, l := range lines[1:] {
		h, err := base64.StdEncoding.DecodeString(l)
		if err != nil || len(h) != 32 {
			return http.StatusBadRequest, "bad proof line\n", "text/plain"
		}
		proof = append(proof, [32]byte(h))
	}
	v, _ := format.NewVerifier(testOrigin, logPub())
	c, err := format.ParseCheckpoint(cp, v)
	if err != nil {
		return http.StatusForbidden, "bad checkpoint\n", "text/plain"
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case old > c.Size:
		return http.StatusBadRequest, "old beyond size\n", "text/plain"
	case old != w.size:
		return http.StatusConflict, fmt.Sprintf("%d\n", w.size), "text/x.tlog.size"
	case old == c.Size && c.Root != w.root:
		return w.sameSizeStatus, "same size, other root\n", "text/plain"
	case old == 0 && len(proof) > 0:
		return http.StatusUnprocessableEntity, "proof from 0\n", "text/plain"
	case old > 0 && format.VerifyConsistency(old, c.Size, proof, w.root, c.Root) != nil:
		return http.StatusUnprocessableEntity, "bad proof\n", "text/plain"
	}
	w.size, w.root = c.Size, c.Root
	s, err := format.SignCosignature(w.name, w.priv, c, uint64(time.Now().Unix()))
	if err != nil {
		return http.StatusInternalServerError, err.Error(), "text/plain"
	}
	answer := s.Line() + "\n"
	for _, l := range w.extraLines {
		answer += l + "\n"
	}
	return http.StatusOK, answer, "text/plain"
}

// status answers with a fixed status, body and content type.
func status(code int, body, ctype string) func(http.ResponseWriter, *http.Request) {
	return func(rw http.ResponseWriter, _ *http.Request) {
		rw.Header().Set("Content-Type", ctype)
		rw.WriteHeader(code)
		rw.Write([]byte(body))
	}
}

// hang answers only when the request is given up.
func hang(_ http.ResponseWriter, r *http.Request) { <-r.Context().Done() }

// memTransport routes each request to the handler of its host, in memory: httptest
// servers cannot run inside a synctest bubble, a RoundTripper can. A request whose
// context ends before its handler does gets the context's error, as from a real client.
type memTransport map[string]http.Handler

func (m memTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	h, ok := m[req.URL.Host]
	if !ok {
		return nil, fmt.Errorf("dial %s: no such host", req.URL.Host)
	}
	rec := httptest.NewRecorder()
	done := make(chan error, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				done <- fmt.Errorf("read %s: connection reset by peer (%v)", req.URL.Host, r)
			}
		}()
		h.ServeHTTP(rec, req)
		done <- nil
	}()
	select {
	case err := <-done:
		if err != nil {
			return nil, err
		}
		return rec.Result(), nil
	case <-req.Context().Done():
		<-done
		return nil, req.Context().Err()
	}
}

func logVKey(t testing.TB) string {
	t.Helper()
	v, err := keys.NoteVerifierKey(testOrigin, logPub())
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// env is a Submitter over a test log and witnesses reached through memTransport.
type env struct {
	t         *testing.T
	log       *testLog
	witnesses []*testWitness
	sub       *submit.Submitter
}

func newEnv(t *testing.T, n int, edit func(*submit.Config)) *env {
	t.Helper()
	e := &env{t: t, log: newTestLog(t, 0)}
	mt := memTransport{}
	cfg := submit.Config{Origin: testOrigin, Key: logPub(), Proof: e.log.proof, Client: &http.Client{Transport: mt}}
	for i := range n {
		w := newTestWitness(i)
		mt[w.host] = w
		e.witnesses = append(e.witnesses, w)
		cfg.Witnesses = append(cfg.Witnesses, w.witness(t, "https://"+w.host+"/w"))
	}
	if edit != nil {
		edit(&cfg)
	}
	s, err := submit.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	e.sub = s
	t.Cleanup(func() { s.Close() })
	return e
}

// submit grows the log by k and submits its checkpoint.
func (e *env) submit(k int) (submit.Result, error) {
	e.t.Helper()
	e.log.grow(k)
	return e.sub.Submit(context.Background(), e.log.checkpoint())
}

// openCosigned opens a cosigned note with the log's key and every witness's, and returns
// the names of the witnesses whose lines verified.
func openCosigned(t testing.TB, msg []byte, ws []*testWitness) []string {
	t.Helper()
	lv, err := format.NewVerifier(testOrigin, logPub())
	if err != nil {
		t.Fatal(err)
	}
	vs := []note.Verifier{lv}
	for _, w := range ws {
		vs = append(vs, w.cosigner(t).Verifier())
	}
	n, err := note.Open(msg, note.VerifierList(vs...))
	if err != nil {
		t.Fatalf("opening cosigned checkpoint: %v\n%s", err, msg)
	}
	var names []string
	for _, s := range n.Sigs[1:] {
		names = append(names, s.Name)
	}
	return names
}
