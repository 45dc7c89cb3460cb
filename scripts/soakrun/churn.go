package main

import (
	"fmt"
	"math/rand/v2"
	"time"
)

// The fleet's churn, each tick: this share of the endpoints changes a tool description,
// this share starts answering 500, and hosts holding about this share stop accepting
// connections; each failure lasts downTicks ticks, then the endpoint or host is back.
const (
	changeShare = 0.02
	failShare   = 0.01
	refuseShare = 0.01
	downTicks   = 3
)

// churner applies the churn to a fleet; only the soak's loop calls it.
type churner struct {
	f        *fleet
	rng      *rand.Rand
	tick     int
	failing  map[int]int // endpoint → tick it comes back
	refused  map[int]int // host → tick it comes back
	frozen   bool
	counts   churnCounts
	errs     []string
	perHost  int
	nEps     int
	nHosts   int
	lastTick time.Time
}

// churnCounts is how much churn the run applied.
type churnCounts struct {
	Ticks, Changes, Failures, Refusals, Recoveries int
}

func newChurner(f *fleet, seed uint64) *churner {
	eps := f.endpoints()
	return &churner{f: f, rng: rand.New(rand.NewPCG(seed, 0x50a4)), failing: map[int]int{}, refused: map[int]int{},
		nEps: len(eps), nHosts: len(f.hosts), perHost: (len(eps) + len(f.hosts) - 1) / len(f.hosts)}
}

// step runs one tick of churn at now: recoveries first, then new changes and failures.
func (c *churner) step(now time.Time) {
	if c.frozen {
		return
	}
	c.tick++
	c.counts.Ticks++
	c.lastTick = now
	c.f.mu.Lock()
	defer c.f.mu.Unlock()
	c.recover(now)
	c.change(now, share(c.nEps, changeShare))
	c.fail(now, share(c.nEps, failShare))
	c.refuse(now, max(1, share(c.nEps, refuseShare)/c.perHost))
}

// share is the count of n a share stands for, at least one.
func share(n int, s float64) int { return max(1, int(float64(n)*s+0.5)) }

// recover brings back the endpoints and hosts whose time is up; the caller holds f.mu.
func (c *churner) recover(now time.Time) {
	for i, back := range c.failing {
		if back <= c.tick {
			c.f.eps[i].failing = false
			c.f.eps[i].upAt = now
			delete(c.failing, i)
			c.counts.Recoveries++
		}
	}
	for h, back := range c.refused {
		if back <= c.tick {
			c.reopen(h, now)
		}
	}
}

// reopen listens on host h again; the caller holds f.mu.
func (c *churner) reopen(h int, now time.Time) {
	if err := c.f.listen(h); err != nil {
		c.errs = append(c.errs, fmt.Sprintf("tick %d: %v", c.tick, err))
		return // tried again next tick
	}
	delete(c.refused, h)
	c.counts.Recoveries++
	for i := range c.f.eps {
		if c.f.eps[i].host == h {
			c.f.eps[i].upAt = now
		}
	}
}

// change gives k endpoints that are up a new revision; the caller holds f.mu.
func (c *churner) change(now time.Time, k int) {
	for _, i := range c.pick(k) {
		e := &c.f.eps[i]
		e.rev++
		e.server = newMCPServer(i, e.rev)
		e.changedAt = now
		c.counts.Changes++
	}
}

// fail makes k endpoints that are up answer 500 for downTicks ticks; the caller holds f.mu.
func (c *churner) fail(now time.Time, k int) {
	for _, i := range c.pick(k) {
		c.f.eps[i].failing = true
		c.f.eps[i].downAt = now
		c.failing[i] = c.tick + downTicks
		c.counts.Failures++
	}
}

// refuse closes k hosts that are up for downTicks ticks; the caller holds f.mu.
func (c *churner) refuse(now time.Time, k int) {
	for range k {
		h := c.rng.IntN(c.nHosts)
		if !c.f.hosts[h].up {
			continue
		}
		c.f.refuse(h)
		c.refused[h] = c.tick + downTicks
		c.counts.Refusals++
		for i := range c.f.eps {
			if c.f.eps[i].host == h {
				c.f.eps[i].downAt = now
			}
		}
	}
}

// pick draws up to k distinct endpoints that are up; the caller holds f.mu.
func (c *churner) pick(k int) []int {
	seen := map[int]bool{}
	var out []int
	for try := 0; len(out) < k && try < 4*k+16; try++ {
		i := c.rng.IntN(c.nEps)
		e := c.f.eps[i]
		if seen[i] || e.failing || !c.f.hosts[e.host].up {
			continue
		}
		seen[i] = true
		out = append(out, i)
	}
	return out
}

// freeze ends the churn: every endpoint and host is brought back, and nothing changes
// any more, so the observers can be compared.
func (c *churner) freeze(now time.Time) {
	c.f.mu.Lock()
	defer c.f.mu.Unlock()
	c.tick += downTicks
	c.recover(now)
	c.frozen = true
}
