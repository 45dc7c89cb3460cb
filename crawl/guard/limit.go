package guard

import (
	"context"
	"sync"
)

// hostLimiter is a counting semaphore per host name. Entries exist only while someone holds or
// waits for a slot, so a crawl over tens of thousands of hosts leaves no map behind.
type hostLimiter struct {
	max int

	mu    sync.Mutex
	hosts map[string]*hostSlots // guarded by mu
}

type hostSlots struct {
	ch   chan struct{} // one token per slot in use; capacity max
	refs int           // holders plus waiters; guarded by hostLimiter.mu
}

func newHostLimiter(max int) *hostLimiter {
	return &hostLimiter{max: max, hosts: make(map[string]*hostSlots)}
}

func (l *hostLimiter) ref(host string) *hostSlots {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.hosts[host]
	if s == nil {
		s = &hostSlots{ch: make(chan struct{}, l.max)}
		l.hosts[host] = s
	}
	s.refs++
	return s
}

func (l *hostLimiter) unref(host string, s *hostSlots) {
	l.mu.Lock()
	defer l.mu.Unlock()
	s.refs--
	if s.refs == 0 {
		delete(l.hosts, host)
	}
}

// acquire waits for a slot on host until ctx ends, and returns its idempotent release.
func (l *hostLimiter) acquire(ctx context.Context, host string) (func(), error) {
	s := l.ref(host)
	select {
	case s.ch <- struct{}{}:
		return l.releaser(host, s), nil
	case <-ctx.Done():
		l.unref(host, s)
		return nil, ctx.Err()
	}
}

// tryAcquire takes a slot only if one is free now.
func (l *hostLimiter) tryAcquire(host string) (func(), bool) {
	s := l.ref(host)
	select {
	case s.ch <- struct{}{}:
		return l.releaser(host, s), true
	default:
		l.unref(host, s)
		return nil, false
	}
}

func (l *hostLimiter) releaser(host string, s *hostSlots) func() {
	var once sync.Once
	return func() {
		once.Do(func() {
			<-s.ch
			l.unref(host, s)
		})
	}
}

// inUse reports the slots held on host; for tests.
func (l *hostLimiter) inUse(host string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	if s := l.hosts[host]; s != nil {
		return len(s.ch)
	}
	return 0
}
