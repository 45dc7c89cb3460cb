package crawl

import (
	"context"
	"net/url"
	"sync"

	"github.com/histor-observer/histor/crawl/guard"
	"github.com/histor-observer/histor/crawl/registry"
)

// scheduler hands targets to workers with hosts interleaved and at most
// perHost slots of one host taken at any moment. A legacy SSE observation
// holds its event stream open while it posts, so it takes two slots.
//
// The guard holds the connection bound by itself; the scheduler keeps the
// workers from queueing behind it, so a host with 2,000 endpoints occupies
// two workers, not all of them.
type scheduler struct {
	perHost int

	mu    sync.Mutex
	cond  *sync.Cond
	hosts []*hostQueue // round-robin ring; guarded by mu
	next  int          // ring position of the next pick; guarded by mu
	left  int          // targets not yet handed out; guarded by mu
}

type hostQueue struct {
	name     string
	targets  []registry.Target
	inFlight int // slots taken; guarded by scheduler.mu
}

func newScheduler(targets []registry.Target, perHost int) *scheduler {
	s := &scheduler{perHost: perHost, left: len(targets)}
	s.cond = sync.NewCond(&s.mu)
	byHost := map[string]*hostQueue{}
	for _, t := range targets {
		h := hostOf(t.Endpoint)
		q := byHost[h]
		if q == nil {
			q = &hostQueue{name: h}
			byHost[h] = q
			s.hosts = append(s.hosts, q)
		}
		q.targets = append(q.targets, t)
	}
	return s
}

// hostOf is the scheduling key of an endpoint: the guard's own key for its
// host (guard.HostKey), so every spelling the guard bounds as one host
// ("bü_cher.example" and its xn-- form, "a.example." and "A.example")
// shares its two slots here too. An endpoint the guard would refuse gets
// its own key; the guard refuses it with a status.
func hostOf(endpoint string) string {
	u, err := url.Parse(endpoint)
	if err != nil {
		return endpoint
	}
	h, err := guard.HostKey(u.Hostname())
	if err != nil {
		return endpoint
	}
	return h
}

func (s *scheduler) weight(t registry.Target) int {
	if t.Transport == registry.TransportSSE {
		return min(2, s.perHost)
	}
	return 1
}

// take blocks until a target whose host has a free slot is available, and
// returns it with its release function; ok is false when every target has
// been handed out or ctx is done.
func (s *scheduler) take(ctx context.Context) (registry.Target, func(), bool) {
	stop := context.AfterFunc(ctx, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.cond.Broadcast()
	})
	defer stop()
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		if s.left == 0 || ctx.Err() != nil {
			return registry.Target{}, nil, false
		}
		if q, t, ok := s.pick(); ok {
			w := s.weight(t)
			q.inFlight += w
			return t, s.releaser(q, w), true
		}
		s.cond.Wait()
	}
}

// pick scans the ring once from the last position for a host with a target
// and room for it. Called with mu held.
func (s *scheduler) pick() (*hostQueue, registry.Target, bool) {
	for range len(s.hosts) {
		q := s.hosts[s.next%len(s.hosts)]
		s.next = (s.next + 1) % len(s.hosts)
		if len(q.targets) == 0 {
			continue
		}
		t := q.targets[0]
		if q.inFlight+s.weight(t) > s.perHost {
			continue
		}
		q.targets = q.targets[1:]
		s.left--
		return q, t, true
	}
	return nil, registry.Target{}, false
}

func (s *scheduler) releaser(q *hostQueue, w int) func() {
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			q.inFlight -= w
			s.cond.Broadcast()
		})
	}
}
