// Package ratelimit counts events per key in a sliding window and refuses
// the ones beyond a limit, remembering a bounded number of keys.
//
// The window is exact, not a token bucket: a key may have at most Events
// events in any span of Window, and a refused event says how long until the
// oldest counted one leaves the window. Refused events are not counted, so
// a caller that keeps knocking is not pushed further back.
//
// Memory is bounded by Config.MaxKeys. Keys are kept in the order of their
// latest counted event; a new key takes the slot of the least recent one
// once every event of that one has left the window. When all MaxKeys keys
// still have events inside the window, new keys share one overflow bucket
// with the same limit: a spray of keys can neither grow the table nor push
// out the keys already in it, and while it lasts only new keys are slowed.
package ratelimit

import (
	"errors"
	"sync"
	"time"
)

// Config is one limit.
type Config struct {
	// Events is the most events one key may have in any span of Window. ≥ 1.
	Events int
	// Window is the span the limit applies to. > 0.
	Window time.Duration
	// MaxKeys is the most keys tracked at once. ≥ 1.
	MaxKeys int
}

// Limiter applies one Config to keys of type K. It is safe for concurrent use.
type Limiter[K comparable] struct {
	cfg   Config
	epoch time.Time // event times are monotonic nanoseconds since epoch

	mu         sync.Mutex
	keys       map[K]*entry[K] // guarded by mu; never more than cfg.MaxKeys
	head, tail *entry[K]       // guarded by mu; most and least recent latest event
	overflow   entry[K]        // guarded by mu; shared by new keys while the table is full
	overflowed uint64          // guarded by mu; events counted against overflow
}

// entry is one key's counted events, a ring of at most Events times.
type entry[K comparable] struct {
	key        K
	hits       []int64 // ns since epoch; hits[start] is the oldest of n; grown by grow
	start, n   int
	prev, next *entry[K]
	listed     bool // on the list (the overflow bucket never is)
}

// New returns a limiter for cfg.
func New[K comparable](cfg Config) (*Limiter[K], error) {
	if cfg.Events < 1 || cfg.Window <= 0 || cfg.MaxKeys < 1 {
		return nil, errors.New("ratelimit: Events and MaxKeys must be at least 1 and Window positive")
	}
	l := &Limiter[K]{cfg: cfg, epoch: time.Now(), keys: make(map[K]*entry[K])}
	return l, nil
}

// Allow counts one event for key and reports true if key had room for it;
// otherwise it counts nothing and reports how long until key has room.
func (l *Limiter[K]) Allow(key K) (ok bool, retryAfter time.Duration) {
	now := int64(time.Since(l.epoch))
	l.mu.Lock()
	defer l.mu.Unlock()
	e := l.keys[key]
	if e == nil {
		e = l.admit(key, now)
	}
	e.expire(now - int64(l.cfg.Window))
	if e.n == l.cfg.Events {
		return false, time.Duration(e.hits[e.start] + int64(l.cfg.Window) - now)
	}
	if e.n == len(e.hits) {
		e.grow(l.cfg.Events)
	}
	e.hits[(e.start+e.n)%len(e.hits)] = now
	e.n++
	if e.listed {
		l.toFront(e)
	} else {
		l.overflowed++
	}
	return true, 0
}

// admit finds key a slot: a new one while the table has room, else the
// least recent key's once its events have all left the window, else the
// shared overflow bucket.
func (l *Limiter[K]) admit(key K, now int64) *entry[K] {
	var e *entry[K]
	switch {
	case len(l.keys) < l.cfg.MaxKeys:
		e = &entry[K]{}
	case l.tail.newest() <= now-int64(l.cfg.Window):
		e = l.tail
		l.unlink(e)
		delete(l.keys, e.key)
		e.start, e.n = 0, 0
	default:
		return &l.overflow
	}
	e.key = key
	l.keys[key] = e
	l.toFront(e)
	return e
}

// grow makes room for one more event, doubling the ring up to limit events:
// a key's memory follows the events it has in the window, not the limit,
// so a limit set high to get it out of the way costs nothing per key.
func (e *entry[K]) grow(limit int) {
	hits := make([]int64, min(limit, max(4, 2*len(e.hits))))
	for i := range e.n {
		hits[i] = e.hits[(e.start+i)%len(e.hits)]
	}
	e.hits, e.start = hits, 0
}

// expire forgets the events at or before cutoff.
func (e *entry[K]) expire(cutoff int64) {
	for e.n > 0 && e.hits[e.start] <= cutoff {
		e.start = (e.start + 1) % len(e.hits)
		e.n--
	}
}

// newest is the time of the latest counted event; a listed entry has one.
func (e *entry[K]) newest() int64 {
	if e.n == 0 {
		return -1 << 63
	}
	return e.hits[(e.start+e.n-1)%len(e.hits)]
}

func (l *Limiter[K]) toFront(e *entry[K]) {
	if l.head == e {
		return
	}
	if e.listed {
		l.unlink(e)
	}
	e.prev, e.next, e.listed = nil, l.head, true
	if l.head != nil {
		l.head.prev = e
	}
	l.head = e
	if l.tail == nil {
		l.tail = e
	}
}

func (l *Limiter[K]) unlink(e *entry[K]) {
	if e.prev != nil {
		e.prev.next = e.next
	} else {
		l.head = e.next
	}
	if e.next != nil {
		e.next.prev = e.prev
	} else {
		l.tail = e.prev
	}
	e.prev, e.next, e.listed = nil, nil, false
}

// Stats reports how many keys are tracked and how many events were counted
// against the shared overflow bucket since New.
func (l *Limiter[K]) Stats() (keys int, overflowed uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.keys), l.overflowed
}
