package log

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/histor-observer/histor/log/format"
	"github.com/histor-observer/histor/log/mtl"
)

// openMem opens a log over a memory store.
func openMem(t testing.TB, s kvStore) (*Log, error) {
	t.Helper()
	l, err := newLog(testConfig(""))
	if err != nil {
		t.Fatal(err)
	}
	return l.start(s)
}

// faultRun is what one scripted scenario saw acknowledged.
type faultRun struct {
	t      *testing.T
	l      *Log
	acked  map[uint64]string // index → label id of every acknowledged entry
	size   uint64            // the largest size acknowledged to anyone
	failed error             // the first call that failed, if any
	// evidence says, of the SRI of every evidence body appended, whether its Append was
	// acknowledged.
	evidence map[string]bool
	next     int // the next test entry number
	// injected tells the injected fault's error; nil means errInjected.
	injected func(error) bool
}

func (r *faultRun) isInjected(err error) bool {
	if r.injected != nil {
		return r.injected(err)
	}
	return errors.Is(err, errInjected)
}

// scenario appends, signs and reads, checking every answer as it goes.
func (r *faultRun) scenario() {
	ctx := context.Background()
	r.append(3, true)
	r.reads()
	r.append(300, false)
	r.signHead(ctx)
	r.reads()
	r.duplicate(ctx)
	r.append(1, true)
	r.signHead(ctx)
	r.append(5, false)
	r.reads()
	r.readsAcked()
}

func (r *faultRun) append(n int, withEvidence bool) {
	t := r.t
	entries := make([]Entry, n)
	for i := range entries {
		entries[i] = testEntry(r.next + i)
	}
	r.next += n
	var ev []Evidence
	if withEvidence {
		ev = []Evidence{{Kind: "toolsets", Body: fmt.Appendf(nil, `{"n":%d}`, r.next)}}
	}
	before := r.l.Latest()
	first, err := r.l.Append(context.Background(), entries, ev)
	if r.evidence == nil {
		r.evidence = map[string]bool{}
	}
	for _, e := range ev {
		r.evidence[mtl.SRI(e.Body)] = err == nil
	}
	if err == nil {
		for i, e := range entries {
			r.acked[first+uint64(i)] = e.ID
		}
		r.size = max(r.size, first+uint64(n))
		if r.l.Size() < first+uint64(n) {
			t.Fatalf("Append acknowledged [%d, %d) but the size is %d", first, first+uint64(n), r.l.Size())
		}
		return
	}
	r.refused(err)
	// Never acknowledged, and no reader sees any of it.
	if after := r.l.Latest(); after.Size != before.Size || !bytes.Equal(after.STH, before.STH) {
		t.Fatalf("a failed Append moved the head from %d to %d", before.Size, after.Size)
	}
	for _, e := range entries {
		if _, err := r.l.LabelIndex(e.ID); !errors.Is(err, ErrNotFound) && !r.isInjected(err) {
			t.Fatalf("label %s of a failed Append: %v", e.ID, err)
		}
	}
	var re *RangeError
	if _, err := r.l.Entries(before.Size, before.Size+1); !errors.As(err, &re) {
		t.Fatalf("an entry past the head of a failed Append: %v", err)
	}
	if _, err := r.l.HeadAt(before.Size + uint64(n)); !errors.Is(err, ErrNotFound) && n > 0 {
		t.Fatalf("a head at the size of a failed Append: %v", err)
	}
	for _, e := range ev {
		if _, err := r.l.Evidence(e.Kind, mtl.SRI(e.Body)); !errors.Is(err, ErrNotFound) && !r.isInjected(err) {
			t.Fatalf("evidence of a failed Append: %v", err)
		}
	}
}

// refused checks that an error names the injected fault and, once the log
// stopped, that it says so.
func (r *faultRun) refused(err error) {
	if !r.isInjected(err) {
		r.t.Fatalf("a call failed without naming the injected fault: %v", err)
	}
	if r.failed == nil {
		r.failed = err
	}
}

func (r *faultRun) signHead(ctx context.Context) {
	before := r.l.Latest()
	h, err := r.l.SignHead(ctx)
	if err != nil {
		r.refused(err)
		if after := r.l.Latest(); !bytes.Equal(after.STH, before.STH) {
			r.t.Fatal("a failed SignHead changed the latest head")
		}
		return
	}
	if h.Size != before.Size || !bytes.Equal(r.l.Latest().STH, h.STH) {
		r.t.Fatalf("SignHead at %d gave a head at %d", before.Size, h.Size)
	}
}

// duplicate appends a label id already logged: refused with an EntryError,
// or, when the lookup of the id failed, with that error.
func (r *faultRun) duplicate(ctx context.Context) {
	var ee *EntryError
	_, err := r.l.Append(ctx, []Entry{testEntry(0)}, nil)
	switch {
	case errors.As(err, &ee) && r.acked[0] != "":
	case err != nil && r.acked[0] == "":
	case r.isInjected(err):
		r.refused(err)
	default:
		r.t.Fatalf("appending a logged label id again: %v", err)
	}
}

// reads checks every read against what was acknowledged; a read may fail
// only with the injected fault.
func (r *faultRun) reads() {
	t, l := r.t, r.l
	h := l.Latest()
	check := func(what string, err error) bool {
		if err != nil && !r.isInjected(err) {
			t.Fatalf("%s: %v", what, err)
		}
		return err == nil
	}
	entries, err := l.Entries(0, h.Size)
	if check("Entries", err) {
		for i, e := range entries {
			if id := r.acked[uint64(i)]; id != "" && !bytes.Contains(e, []byte(id)) {
				t.Fatalf("entry %d is not the label acknowledged there", i)
			}
		}
	}
	if at, err := l.HeadAt(h.Size); check("HeadAt", err) && (at.Size != h.Size || at.Root != h.Root) {
		t.Fatalf("HeadAt(%d) gave size %d", h.Size, at.Size)
	}
	if h.Size > 1 {
		proof, err := l.InclusionProof(1, h.Size)
		if check("InclusionProof", err) && entries != nil {
			p := make(tlog.RecordProof, len(proof))
			for i := range proof {
				p[i] = proof[i]
			}
			if err := tlog.CheckRecord(p, int64(h.Size), h.Root, 1, format.LeafHash(entries[1])); err != nil {
				t.Fatalf("inclusion proof does not check: %v", err)
			}
		}
		if i, err := l.LabelIndex(r.acked[1]); check("LabelIndex", err) && i != 1 {
			t.Fatalf("LabelIndex = %d", i)
		}
		if root, err := l.RootAt(h.Size); check("RootAt", err) && root != h.Root {
			t.Fatal("RootAt is not the head's root")
		}
	}
}

// readsAcked checks, stopped or not, that the reads serve what was acknowledged and
// nothing else: the head is at the size acknowledged last, every acknowledged label is at its
// index, the entry bundles hold those labels and end at the head, tlog's client proves the
// last leaf through the hash tiles under the head's root, and the evidence of an
// acknowledged Append is served, of a failed one not. A read may fail only with the fault.
func (r *faultRun) readsAcked() {
	t, l := r.t, r.l
	h := l.Latest()
	if h.Size != r.size {
		t.Fatalf("the head is at %d; %d was acknowledged last (failed: %v)", h.Size, r.size, r.failed)
	}
	failed := func(what string, err error) bool {
		if err != nil && !r.isInjected(err) {
			t.Fatalf("%s: %v", what, err)
		}
		return err != nil
	}
	for i, id := range r.acked {
		if got, err := l.LabelIndex(id); !failed("LabelIndex", err) && got != i {
			t.Fatalf("acknowledged label %s at %d, want %d", id, got, i)
		}
	}
	for n := uint64(0); n*tileWidth < h.Size; n++ {
		w := int(min(tileWidth, h.Size-n*tileWidth))
		b, err := l.EntryBundle(n, w)
		if failed("EntryBundle", err) {
			continue
		}
		offs, err := format.BundleOffsets(b)
		if err != nil || len(offs) != w {
			t.Fatalf("entry bundle %d: %d entries, want %d (%v)", n, len(offs), w, err)
		}
		for k := range w {
			if id := r.acked[n*tileWidth+uint64(k)]; id != "" && !bytes.Contains(format.BundleEntry(b, offs, k), []byte(id)) {
				t.Fatalf("entry %d of bundle %d is not the label acknowledged there", k, n)
			}
		}
		if _, err := l.EntryBundle(n, w+1); w < tileWidth && !errors.Is(err, ErrNotFound) && !r.isInjected(err) {
			t.Fatalf("entry bundle %d one past the head: %v", n, err)
		}
	}
	if h.Size > 0 {
		hr := tlog.TileHashReader(tlog.Tree{N: int64(h.Size), Hash: h.Root}, tileClient{l})
		last, err := l.Entries(h.Size-1, h.Size)
		hs, herr := hr.ReadHashes([]int64{tlog.StoredHashIndex(0, int64(h.Size)-1)})
		if !failed("Entries", err) && !failed("the hash tiles", herr) && hs[0] != format.LeafHash(last[0]) {
			t.Fatalf("the hash tiles prove another last leaf at %d", h.Size-1)
		}
	}
	for sri, acked := range r.evidence {
		_, err := l.Evidence("toolsets", sri)
		if acked {
			failed("Evidence", err)
		} else if !errors.Is(err, ErrNotFound) && !r.isInjected(err) {
			t.Fatalf("evidence %s of a failed Append: %v", sri, err)
		}
	}
}

// verify reopens what the store made durable and checks it: the tree
// re-derived by fsck agrees with itself, every acknowledged entry is at its
// index, and the size never went back.
func (r *faultRun) verify(m *memStore) *Log {
	t := r.t
	s := m.crash()
	rep, err := fsckStore(context.Background(), s, discardLogger())
	if err != nil || len(rep.Problems) > 0 {
		t.Fatalf("fsck after the scenario: %v %+v", err, rep)
	}
	l, err := openMem(t, s)
	if err != nil {
		t.Fatalf("reopening after the scenario: %v", err)
	}
	if l.Size() < r.size || rep.Size != l.Size() {
		t.Fatalf("reopened at size %d (fsck %d), %d was acknowledged", l.Size(), rep.Size, r.size)
	}
	for i, id := range r.acked {
		if got, err := l.LabelIndex(id); err != nil || got != i {
			t.Fatalf("acknowledged label %s: index %d, %v; want %d", id, got, err, i)
		}
	}
	return l
}

// TestFaultEachStoreCall fails each store call of a scripted scenario in
// turn (every read, write and sync after Open) and checks the rules of
// docs/operations.md: a failed call is never acknowledged and nobody sees
// its entries or head; after a failed read the log goes on; after a failed
// write or sync every later append is refused with a *StoppedError naming
// the cause; and what the store made durable reopens to a whole tree that
// keeps everything acknowledged.
func TestFaultEachStoreCall(t *testing.T) {
	counts := map[storeOp]int{}
	{
		m := newMemStore()
		l, err := openMem(t, m)
		if err != nil {
			t.Fatal(err)
		}
		m.arm(fault{})
		r := &faultRun{t: t, l: l, acked: map[uint64]string{}}
		r.scenario()
		for _, op := range []storeOp{opRead, opApply, opSync} {
			counts[op] = m.callCount(op)
		}
		l.Close()
		r.verify(m).Close()
	}
	t.Logf("store calls in the scenario: %v", counts)
	for _, op := range []storeOp{opRead, opApply, opSync} {
		for n := 1; n <= counts[op]; n++ {
			t.Run(fmt.Sprintf("%s#%d", op, n), func(t *testing.T) { runFault(t, fault{op: op, n: n}) })
		}
	}
	for _, key := range [][]byte{tileKey(0, 0), labelKey(testEntry(0).ID), bundleKey(0), bundleKey(1)} {
		t.Run(fmt.Sprintf("read of %x", key), func(t *testing.T) { runFault(t, fault{op: opRead, key: key}) })
	}
}

func runFault(t *testing.T, f fault) {
	m := newMemStore()
	l, err := openMem(t, m)
	if err != nil {
		t.Fatal(err)
	}
	m.arm(f)
	r := &faultRun{t: t, l: l, acked: map[uint64]string{}}
	r.scenario()
	injected := m.injected()
	if f.key == nil && len(injected) == 0 && m.callCount(f.op) >= f.n {
		t.Fatalf("the fault never fired")
	}
	if len(injected) > 0 && f.op != opRead && r.failed == nil {
		t.Fatalf("a failed %s (%s) reached no caller", f.op, m.describe())
	}
	// After a failed write or sync the log refuses appends and names the
	// cause; after a failed read it goes on.
	_, err = l.Append(context.Background(), []Entry{testEntry(10_000)}, nil)
	var se *StoppedError
	switch {
	case len(injected) > 0 && f.op != opRead:
		want := map[storeOp]string{opApply: "write", opSync: "sync"}[f.op]
		if !errors.As(err, &se) || !errors.Is(err, errInjected) || se.Op != want {
			t.Fatalf("append after a failed %s: %v, want a *StoppedError naming it", f.op, err)
		}
	case err != nil:
		t.Fatalf("append after a failed read (%s): %v", m.describe(), err)
	default:
		r.acked[r.size] = testEntry(10_000).ID
		r.size++
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l2 := r.verify(m)
	defer l2.Close()
	if _, err := l2.Append(context.Background(), []Entry{testEntry(20_000)}, nil); err != nil {
		t.Fatalf("append after reopening: %v", err)
	}
}

// TestFaultDuringOpen fails each read of Open over a stored log, and each
// write and sync of Open creating one: Open refuses, naming the fault, and
// signs nothing.
func TestFaultDuringOpen(t *testing.T) {
	m := newMemStore()
	l, err := openMem(t, m)
	if err != nil {
		t.Fatal(err)
	}
	r := &faultRun{t: t, l: l, acked: map[uint64]string{}}
	r.append(300, true)
	l.Close()
	stored := m.crash()
	stored.arm(fault{})
	l, err = openMem(t, stored)
	if err != nil {
		t.Fatal(err)
	}
	reads := stored.callCount(opRead)
	l.Close()
	for n := 1; n <= reads; n++ {
		s := m.crash()
		s.arm(fault{op: opRead, n: n})
		if l, err := openMem(t, s); err == nil {
			l.Close()
			t.Fatalf("read #%d failed and Open went on", n)
		} else if !errors.Is(err, errInjected) {
			t.Fatalf("read #%d: Open said %v", n, err)
		}
		if s.callCount(opApply) != 0 {
			t.Fatalf("read #%d failed and Open wrote", n)
		}
	}
	for _, op := range []storeOp{opApply, opSync} {
		s := newMemStore()
		s.arm(fault{op: op, n: 1})
		if l, err := openMem(t, s); err == nil || !errors.Is(err, errInjected) {
			if l != nil {
				l.Close()
			}
			t.Fatalf("creating a log with a failed %s: %v", op, err)
		}
		if got := walk(t, s.crash(), "", "", false); got != "" {
			t.Fatalf("a failed creation left %q", got)
		}
	}
}
