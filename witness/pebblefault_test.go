package witness_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/vfs"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/mod/sumdb/note"

	"github.com/histor-observer/histor/internal/faultfs"
	"github.com/histor-observer/histor/internal/pebbledb"
	"github.com/histor-observer/histor/internal/promset/promtest"
	"github.com/histor-observer/histor/witness"
)

// storeFault is one run of the witness's add-checkpoint sequence on Pebble over a disk kept
// in memory, whose unsynced writes a crash loses.
type storeFault struct {
	t        *testing.T
	mem      *vfs.MemFS
	sw       *faultfs.Switch
	log      *testLog // the log's true history
	fork     *testLog // the same key signing other leaves
	cosigned []int64  // every size cosigned (answered 200), in order
	last     []byte   // the cosignature line of the last size cosigned
	told     []string // the IDs of the bundles OnEvidence was told of: stored
	failed   error    // the first add-checkpoint that could not be answered
}

func newStoreFault(t *testing.T) *storeFault {
	l := newTestLog(t, "example.com/faulty-log")
	return &storeFault{t: t, mem: vfs.NewStrictMem(), sw: &faultfs.Switch{}, log: l, fork: l.fork()}
}

func (s *storeFault) open(fs vfs.FS, reg prometheus.Registerer) *witness.Witness {
	s.t.Helper()
	w, err := witness.New(witness.Config{
		Dir: "witness", FS: fs, Name: witnessName, Key: witnessKey(),
		Logs:       map[string]note.Verifier{s.log.origin: s.log.verifier},
		Clock:      func() time.Time { return testNow },
		Registerer: reg,
		OnEvidence: func(e witness.Evidence) { s.told = append(s.told, e.ID) },
	})
	if err != nil {
		s.t.Fatalf("opening the witness: %v", err)
	}
	return w
}

// step is one add-checkpoint of the sequence and what a sound witness answers.
type step struct {
	body []byte
	want int
}

// steps are the sequence: the log grows, its fork is shown at a size cosigned (a same-size
// fork, stored as evidence) and with a proof that fails (a failed-proof fork), twice each.
func (s *storeFault) steps() []step {
	t, l, f := s.t, s.log, s.fork
	forkAt := func(n int64) []byte {
		return witness.Request{Old: uint64(n), Checkpoint: f.checkpoint(t, n)}.Marshal()
	}
	badProof := func(m, n int64) []byte {
		return witness.Request{Old: uint64(m), Proof: f.proof(t, m, n), Checkpoint: f.checkpoint(t, n)}.Marshal()
	}
	return []step{
		{l.request(t, 0, 3), 200},
		{l.request(t, 3, 7), 200},
		{forkAt(7), 422},
		{l.request(t, 7, 12), 200},
		{badProof(12, 20), 422},
		{l.request(t, 12, 20), 200},
		{l.request(t, 20, 20), 200},
		{forkAt(20), 422},
		{l.request(t, 20, 33), 200},
	}
}

// run opens the witness, arms inj and plays the sequence. A sound answer must be the one a
// witness without faults gives; an error must carry the fault; once one came, the witness
// is stopped and says so, and cosigns nothing more.
func (s *storeFault) run(inj faultfs.Injector) {
	t := s.t
	reg := prometheus.NewRegistry()
	w := s.open(faultfs.Wrap(s.mem, s.sw), reg)
	s.sw.Arm(inj)
	sizes := []int64{3, 7, 7, 12, 20, 20, 20, 20, 33}
	for i, st := range s.steps() {
		res, err := w.AddCheckpoint(context.Background(), st.body)
		switch {
		case err != nil:
			if !faultfs.IsFault(err) {
				t.Fatalf("step %d: %v, not the fault", i, err)
			}
			if s.failed == nil {
				s.failed = err
			}
		case res.Status == 200 && s.failed != nil:
			t.Fatalf("step %d cosigned after the store failed (%v)", i, s.failed)
		case res.Status == 409 && string(res.Body) != strconv.FormatInt(s.lastCosigned(), 10)+"\n":
			t.Fatalf("step %d: 409 says %q was cosigned last; %d was (failed: %v)", i, res.Body, s.lastCosigned(), s.failed)
		case s.failed != nil:
			// Stopped: the state is behind the sequence, so refusals (409) are expected.
		case res.Status != st.want:
			t.Fatalf("step %d: %d (%s), want %d", i, res.Status, res.Reason, st.want)
		case res.Status == 200:
			checkCosigned(t, s.log, s.log.checkpoint(t, sizes[i]), res.Body)
			s.cosigned, s.last = append(s.cosigned, sizes[i]), res.Body
		}
	}
	s.readsAcked(w)
	stopped := w.Stopped()
	if (s.failed != nil) != (stopped != nil) || (stopped != nil && !faultfs.IsFault(stopped)) {
		t.Fatalf("Stopped is %v after the first failure %v", stopped, s.failed)
	}
	want := map[bool]float64{false: 0, true: 1}[stopped != nil]
	if got := promtest.Sum(t, reg, "histor_witness_stopped"); got != want {
		t.Fatalf("histor_witness_stopped is %v, want %v", got, want)
	}
	if err := w.Close(); err != nil && !faultfs.IsFault(err) {
		t.Fatalf("closing after the fault: %v", err)
	}
	s.sw.Arm(nil)
}

func (s *storeFault) lastCosigned() int64 {
	if n := len(s.cosigned); n > 0 {
		return s.cosigned[n-1]
	}
	return 0
}

// readsAcked checks what the witness serves, stopped or not, against what it acknowledged:
// the latest state and the monitoring route's checkpoint are those of the last 200, and the
// evidence held is what OnEvidence was told of. A failed commit's writes must not show:
// Pebble applies a batch before its WAL sync, so its reads show what a crash then loses, and
// a cosignature served from it would be undone by a restart.
func (s *storeFault) readsAcked(w *witness.Witness) {
	t := s.t
	t.Helper()
	st, ok, err := w.Latest(s.log.origin)
	last := s.lastCosigned()
	switch {
	case err != nil:
		t.Fatalf("reading the state: %v", err)
	case ok != (last > 0) || int64(st.Size) != last:
		t.Fatalf("the state served is size %d (%v); %d was cosigned last (failed: %v)", st.Size, ok, last, s.failed)
	case ok && !bytes.HasSuffix(st.Checkpoint, s.last):
		t.Fatalf("the checkpoint served at size %d does not end with the cosignature answered:\n%s", st.Size, st.Checkpoint)
	}
	sum := sha256.Sum256([]byte(s.log.origin))
	rec := httptest.NewRecorder()
	w.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/"+hex.EncodeToString(sum[:])+"/checkpoint", nil))
	if want := map[bool]int{false: http.StatusNotFound, true: http.StatusOK}[ok]; rec.Code != want || (ok && !bytes.Equal(rec.Body.Bytes(), st.Checkpoint)) {
		t.Fatalf("GET checkpoint: %d %q; want %d and the state's checkpoint", rec.Code, rec.Body, want)
	}
	held, err := w.ListEvidence()
	if err != nil {
		t.Fatalf("listing evidence: %v", err)
	}
	var ids []string
	for _, e := range held {
		ids = append(ids, e.ID)
	}
	if told := slices.Sorted(slices.Values(s.told)); !slices.Equal(ids, told) {
		t.Fatalf("the evidence held is %v; stored were %v (failed: %v)", ids, told, s.failed)
	}
	for _, id := range s.told {
		if _, err := w.GetEvidence(id); err != nil {
			t.Fatalf("evidence %s, stored: %v", id, err)
		}
	}
}

// verify crashes the disk (unsynced writes lost) and reopens the witness on it: the state is
// no older than the last size cosigned, each fork is still refused at every size cosigned
// (no cosignature over a fork is ever given), and it cosigns the log's growth again.
func (s *storeFault) verify() {
	t := s.t
	s.mem.ResetToSyncedState()
	w := s.open(s.mem, nil)
	defer w.Close()
	st, ok, err := w.Latest(s.log.origin)
	if err != nil {
		t.Fatalf("reading the state after the crash: %v", err)
	}
	var last int64
	if n := len(s.cosigned); n > 0 {
		last = s.cosigned[n-1]
	}
	if last > 0 && (!ok || int64(st.Size) < last) {
		t.Fatalf("the state after the crash is size %d (%v); %d was cosigned", st.Size, ok, last)
	}
	if ok && st.Root != s.log.root(t, int64(st.Size)) {
		t.Fatalf("the state after the crash is not the log's tree at size %d", st.Size)
	}
	for _, n := range s.cosigned {
		body := witness.Request{Old: st.Size, Checkpoint: s.fork.checkpoint(t, n)}.Marshal()
		if res, err := w.AddCheckpoint(context.Background(), body); err != nil || res.Status == 200 {
			t.Fatalf("the fork at size %d, cosigned before the crash: %d, %v", n, res.Status, err)
		}
	}
	res, err := w.AddCheckpoint(context.Background(), s.log.request(t, int64(st.Size), 40))
	if err != nil || res.Status != 200 {
		t.Fatalf("cosigning after the crash from size %d: %d %s, %v", st.Size, res.Status, res.Body, err)
	}
}

// TestPebbleFaults runs the add-checkpoint sequence on the witness's real store, Pebble, over
// a disk that fails: each write, sync, create, rename, remove and close after Open in turn,
// once and from then on, and a disk that fills. After each: a call that failed is answered
// with an error and no cosignature; the witness stops cosigning and says so (Stopped,
// histor_witness_stopped); no panic escapes; and after a crash the state is never behind what
// was cosigned, and no fork is cosigned.
func TestPebbleFaults(t *testing.T) {
	counts := map[faultfs.Op]*faultfs.Plan{}
	room := &faultfs.Full{Bytes: 1 << 40}
	all := faultfs.All{room}
	for _, op := range faultfs.Ops {
		counts[op] = &faultfs.Plan{Kinds: []faultfs.Op{op}}
		all = append(all, counts[op])
	}
	sound := newStoreFault(t)
	sound.run(all)
	if sound.failed != nil || len(sound.cosigned) != 6 {
		t.Fatalf("without faults: cosigned %v, failed %v", sound.cosigned, sound.failed)
	}
	sound.verify()
	if counts[faultfs.Write].Seen() == 0 || counts[faultfs.Sync].Seen() == 0 {
		t.Fatal("the sequence wrote nothing the test could fail")
	}
	stopped := 0
	for _, op := range faultfs.Ops {
		for _, at := range faultfs.Spread(counts[op].Seen(), 8) {
			for _, sticky := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s#%d/%s", op, at, map[bool]string{false: "once", true: "from-then-on"}[sticky]), func(t *testing.T) {
					s := newStoreFault(t)
					plan := &faultfs.Plan{Kinds: []faultfs.Op{op}, At: at, Sticky: sticky}
					s.run(plan)
					if len(plan.Fired()) == 0 && plan.Seen() < at {
						// Pebble removes obsolete files in the background: how many calls of a kind a run
						// makes before it ends can vary with timing.
						t.Skipf("this run made %d such calls, not %d", plan.Seen(), at)
					}
					if len(plan.Fired()) == 0 {
						t.Fatalf("the fault never fired (%d calls)", plan.Seen())
					}
					if s.failed != nil {
						stopped++
					}
					s.verify()
				})
			}
		}
	}
	for _, frac := range []int64{10, 50, 90} {
		t.Run(fmt.Sprintf("full-disk-at-%d%%", frac), func(t *testing.T) {
			s := newStoreFault(t)
			full := &faultfs.Full{Bytes: room.Used() * frac / 100}
			s.run(full)
			if full.Refused() == 0 || s.failed == nil {
				t.Fatalf("a disk full at %d of %d bytes refused %d writes, failed %v", full.Bytes, room.Used(), full.Refused(), s.failed)
			}
			stopped++
			s.verify()
		})
	}
	if stopped == 0 {
		t.Fatal("no fault stopped the witness: the test failed nothing that mattered")
	}
	t.Logf("calls in the sequence: write %d, sync %d, create %d, rename %d, remove %d, close %d; %d bytes; %d runs stopped the witness",
		counts[faultfs.Write].Seen(), counts[faultfs.Sync].Seen(), counts[faultfs.Create].Seen(), counts[faultfs.Rename].Seen(),
		counts[faultfs.Remove].Seen(), counts[faultfs.Close].Seen(), room.Used(), stopped)
}

// TestReadsDuringSync: while a cosignature's batch waits for its WAL sync, Pebble's reads show
// it already, and a crash then would lose it. The state, the monitoring route and the 409s
// must show the size cosigned before until the sync returns, and for good when it fails; a
// sync that succeeds shows the new one. (A 409 waits for the origin's turn, so it cannot
// be asked while the cosignature is in flight.)
func TestReadsDuringSync(t *testing.T) {
	for _, fails := range []bool{false, true} {
		t.Run(map[bool]string{false: "synced", true: "failed"}[fails], func(t *testing.T) {
			defer func(wait time.Duration) { pebbledb.FatalCloseWait = wait }(pebbledb.FatalCloseWait)
			pebbledb.FatalCloseWait = 200 * time.Millisecond
			s := newStoreFault(t)
			h := faultfs.NewHold()
			w := s.open(faultfs.Wrap(s.mem, h), nil)
			defer w.Close()
			defer h.Release(faultfs.ErrInjected) // a check that failed while the sync was held lets it go, failed
			first, err := w.AddCheckpoint(context.Background(), s.log.request(t, 0, 3))
			if err != nil || first.Status != 200 {
				t.Fatalf("cosigning size 3: %d, %v", first.Status, err)
			}
			s.cosigned, s.last = []int64{3}, first.Body
			h.Arm(0)
			done := make(chan witness.Result)
			go func() {
				res, _ := w.AddCheckpoint(context.Background(), s.log.request(t, 3, 7))
				done <- res
			}()
			<-h.Held()
			// The commit applies its batch beside the WAL's sync: wait until Pebble's reads show it.
			for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
				if size, _ := witness.RawStateSize(w, s.log.origin); size == 7 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("Pebble's reads during the sync never showed the cosignature: the premise is gone")
				}
			}
			s.readsAcked(w)
			release := error(nil)
			if fails {
				release = faultfs.ErrInjected
			}
			h.Release(release)
			res := <-done
			if fails != (res.Status != 200) {
				t.Fatalf("the cosignature whose sync returned %v: %d %s", release, res.Status, res.Body)
			}
			if !fails {
				s.cosigned, s.last = append(s.cosigned, 7), res.Body
			}
			s.readsAcked(w)
		})
	}
}
