package log

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
)

// errInjected is the error every injected fault returns.
var errInjected = errors.New("injected fault")

// storeOp names a kind of store call a fault can hit.
type storeOp string

const (
	opRead  storeOp = "read"  // a get, or an iter (failing when it is made)
	opApply storeOp = "apply" // the write of a batch
	opSync  storeOp = "sync"  // the wait for a batch to be durable
)

// fault fails the nth call (from 1) of op, or, with key set, every read of
// key (a get of it, or an iter that reaches it).
type fault struct {
	op  storeOp
	n   int
	key []byte
}

// memStore is a kvStore in memory that keeps what a crash would keep apart
// from what reads see: a batch is visible once applied and durable once its
// wait succeeded, as with Pebble's WAL. A failed sync is sticky, as a
// failed fsync is (the pages it was to write may be gone), so no later
// batch becomes durable either.
type memStore struct {
	mu       sync.Mutex
	keys     []string // sorted keys of visible
	visible  map[string][]byte
	durable  map[string][]byte
	syncErr  error
	closed   bool
	fault    fault
	calls    map[storeOp]int
	failures []string // every fault injected, in order
}

func newMemStore() *memStore {
	return &memStore{visible: map[string][]byte{}, durable: map[string][]byte{}, calls: map[storeOp]int{}}
}

// crash returns a new store holding only what was durable, with no fault.
func (m *memStore) crash() *memStore {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := newMemStore()
	for k, v := range m.durable {
		c.durable[k], c.visible[k] = v, v
		c.keys = append(c.keys, k)
	}
	slices.Sort(c.keys)
	return c
}

// arm sets the fault and clears the call counts.
func (m *memStore) arm(f fault) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.fault, m.calls, m.failures = f, map[storeOp]int{}, nil
}

func (m *memStore) injected() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.failures)
}

func (m *memStore) callCount(op storeOp) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.calls[op]
}

// hit counts a call of op and says whether the fault fails it; mu is held.
func (m *memStore) hit(op storeOp, key []byte) error {
	m.calls[op]++
	f := m.fault
	switch {
	case f.op == op && f.key == nil && f.n == m.calls[op]:
	case f.op == op && f.key != nil && key != nil && bytes.Equal(f.key, key):
	default:
		return nil
	}
	m.failures = append(m.failures, fmt.Sprintf("%s #%d %x", op, m.calls[op], key))
	return fmt.Errorf("%s #%d: %w", op, m.calls[op], errInjected)
}

func (m *memStore) get(key []byte) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, errStoreClosed
	}
	if err := m.hit(opRead, key); err != nil {
		return nil, err
	}
	v, ok := m.visible[string(key)]
	if !ok {
		return nil, ErrNotFound
	}
	return bytes.Clone(v), nil
}

func (m *memStore) iter(lower, upper []byte, reverse bool) (kvIter, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, errStoreClosed
	}
	if err := m.hit(opRead, nil); err != nil {
		return nil, err
	}
	from, _ := slices.BinarySearch(m.keys, string(lower))
	to := len(m.keys)
	if upper != nil {
		to, _ = slices.BinarySearch(m.keys, string(upper))
	}
	it := &memIter{pos: -1}
	for _, k := range m.keys[from:max(from, to)] {
		it.kvs = append(it.kvs, memKV{k, m.visible[k]})
		if m.fault.op == opRead && m.fault.key != nil && k == string(m.fault.key) {
			it.failAt = len(it.kvs)
		}
	}
	if reverse {
		slices.Reverse(it.kvs)
		if it.failAt != 0 {
			it.failAt = len(it.kvs) + 1 - it.failAt
		}
	}
	if it.failAt != 0 {
		it.fail = func() error { return m.injectedAt(opRead, []byte(it.kvs[it.failAt-1].k)) }
	}
	return it, nil
}

// injectedAt records a fault an iterator met at key.
func (m *memStore) injectedAt(op storeOp, key []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.failures = append(m.failures, fmt.Sprintf("%s reaching %x", op, key))
	return fmt.Errorf("%s reaching %x: %w", op, key, errInjected)
}

type memKV struct {
	k string
	v []byte
}

type memIter struct {
	kvs    []memKV
	pos    int
	failAt int // 1 + the position at which the walk fails; 0: none
	fail   func() error
	err    error
}

func (it *memIter) next() bool {
	if it.err != nil {
		return false
	}
	it.pos++
	if it.failAt != 0 && it.pos == it.failAt-1 {
		it.err = it.fail()
		return false
	}
	return it.pos < len(it.kvs)
}

func (it *memIter) key() []byte   { return []byte(it.kvs[it.pos].k) }
func (it *memIter) value() []byte { return it.kvs[it.pos].v }
func (it *memIter) close() error  { return it.err }

type memBatch struct{ kvs []memKV }

func (b *memBatch) set(key, value []byte) {
	b.kvs = append(b.kvs, memKV{string(key), bytes.Clone(value)})
}

func (m *memStore) newBatch(int) kvBatch { return &memBatch{} }

func (m *memStore) apply(b kvBatch) (func() error, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, errStoreClosed
	}
	if err := m.hit(opApply, nil); err != nil {
		return nil, err
	}
	kvs := b.(*memBatch).kvs
	for _, kv := range kvs {
		if _, ok := m.visible[kv.k]; !ok {
			i, _ := slices.BinarySearch(m.keys, kv.k)
			m.keys = slices.Insert(m.keys, i, kv.k)
		}
		m.visible[kv.k] = kv.v
	}
	return func() error { return m.sync(kvs) }, nil
}

func (m *memStore) sync(kvs []memKV) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.hit(opSync, nil); err != nil && m.syncErr == nil {
		m.syncErr = err
	}
	if m.syncErr != nil {
		return m.syncErr
	}
	for _, kv := range kvs {
		m.durable[kv.k] = kv.v
	}
	return nil
}

func (m *memStore) close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return errStoreClosed
	}
	m.closed = true
	return nil
}

// describe lists the injected failures for a test message.
func (m *memStore) describe() string { return strings.Join(m.injected(), "; ") }
