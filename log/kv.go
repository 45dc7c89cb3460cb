package log

import "fmt"

// kvStore is all the log asks of its key-value store; Pebble is the one a
// node runs (pebbleStore), and the tests run the log over a memory store
// that can fail any chosen call. The log never deletes: records only grow
// or are rewritten whole (an edge tile, the last entry bundle, the latest
// head).
//
// Reads may see a batch as soon as apply returns, before it is durable: the
// log itself keeps every answer within its latest durable head, so the
// store need not hide unsynced writes.
type kvStore interface {
	// get returns a copy of key's value; a missing key is ErrNotFound.
	get(key []byte) ([]byte, error)
	// iter visits the keys in [lower, upper), ascending or, with reverse,
	// descending, over a snapshot taken when it is called; a nil bound is
	// open.
	iter(lower, upper []byte, reverse bool) (kvIter, error)
	// newBatch starts a batch of about sizeHint bytes.
	newBatch(sizeHint int) kvBatch
	// apply writes b as one: once it returns nil every read sees all of b,
	// and none of it before. wait returns once b, and every batch applied
	// before it, is durable; a batch whose wait failed may be partly on
	// disk or not at all. b is released either way. An error from apply
	// leaves it unknown whether any of b reached the disk.
	apply(b kvBatch) (wait func() error, err error)
	// close releases the store; later calls return ErrClosed.
	close() error
}

// kvBatch collects writes applied together. A later set of the same key
// wins.
type kvBatch interface {
	// set records key = value; both are copied.
	set(key, value []byte)
}

// kvIter walks a range. key and value are valid until the next call to
// next.
type kvIter interface {
	next() bool
	key() []byte
	value() []byte
	// close releases the iterator and returns the first error met, which
	// also ended the walk early.
	close() error
}

// commit applies b and waits for it to be durable.
func commit(s kvStore, b kvBatch) error {
	wait, err := s.apply(b)
	if err != nil {
		return err
	}
	return wait()
}

// firstKey returns the first key in [lower, upper) (the last, with
// reverse), or ErrNotFound.
func firstKey(s kvStore, lower, upper []byte, reverse bool) ([]byte, error) {
	it, err := s.iter(lower, upper, reverse)
	if err != nil {
		return nil, err
	}
	var k []byte
	if it.next() {
		k = append([]byte(nil), it.key()...)
	}
	if err := it.close(); err != nil {
		return nil, err
	}
	if k == nil {
		return nil, ErrNotFound
	}
	return k, nil
}

// scan calls fn for every key in [lower, upper) in order, stopping at fn's
// first error; the store's own error comes first if the walk ended on one.
func scan(s kvStore, lower, upper []byte, fn func(key, value []byte) error) error {
	it, err := s.iter(lower, upper, false)
	if err != nil {
		return err
	}
	var fnErr error
	for fnErr == nil && it.next() {
		fnErr = fn(it.key(), it.value())
	}
	if err := it.close(); err != nil {
		return err
	}
	return fnErr
}

// errStoreClosed is what a closed store answers; it is ErrClosed.
var errStoreClosed = fmt.Errorf("store: %w", ErrClosed)
