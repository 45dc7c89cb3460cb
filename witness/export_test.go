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
