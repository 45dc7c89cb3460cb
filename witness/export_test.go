package witness

import "errors"

// failingKV fails every commit while fail is set, so a test can prove that a write that did
// not happen shows no cosignature.
type failingKV struct {
	kv
	fail *bool
}

var errInjected = errors.New("injected write failure")

func (f failingKV) commit(pairs []kvPair) error {
	if *f.fail {
		return errInjected
	}
	return f.kv.commit(pairs)
}

// FailCommits makes every store commit of w fail until heal is called.
func FailCommits(w *Witness) (heal func()) {
	fail := true
	w.dbMu.Lock()
	w.db = failingKV{kv: w.db, fail: &fail}
	w.dbMu.Unlock()
	return func() {
		w.dbMu.Lock()
		fail = false
		w.dbMu.Unlock()
	}
}

// HoldTurn takes origin's turn, as a request in flight would, until release is called.
func HoldTurn(w *Witness, origin string) (release func()) {
	l := w.log(origin)
	l.turn <- struct{}{}
	return func() { <-l.turn }
}

var ErrInjected = errInjected

// RawStateSize is the size of origin's state as Pebble's own reads show it, past the
// acknowledged view: a test holding a commit's sync waits on it to know the batch is applied.
func RawStateSize(w *Witness, origin string) (uint64, bool) {
	p, ok := w.db.(*pebbleKV)
	if !ok {
		return 0, false
	}
	v, closer, err := p.db.Get(stateKey(origin))
	if err != nil {
		return 0, false
	}
	defer closer.Close()
	st, err := decodeStored(v)
	return st.size, err == nil
}
