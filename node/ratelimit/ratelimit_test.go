package ratelimit

import (
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

func mustNew[K comparable](t *testing.T, cfg Config) *Limiter[K] {
	t.Helper()
	l, err := New[K](cfg)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestNewRefusesBadConfig(t *testing.T) {
	for _, cfg := range []Config{
		{Events: 0, Window: time.Minute, MaxKeys: 1},
		{Events: 1, Window: 0, MaxKeys: 1},
		{Events: 1, Window: time.Minute, MaxKeys: 0},
	} {
		if _, err := New[string](cfg); err == nil {
			t.Errorf("New(%+v) accepted", cfg)
		}
	}
}

// TestWindow walks one key through its window: the limit, the exact retry
// time, the oldest event leaving, and a refused event not being counted.
func TestWindow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := mustNew[string](t, Config{Events: 3, Window: time.Minute, MaxKeys: 10})
		steps := []struct {
			wait  time.Duration // before this event
			ok    bool
			retry time.Duration
		}{
			{0, true, 0},
			{10 * time.Second, true, 0},
			{10 * time.Second, true, 0},
			{10 * time.Second, false, 30 * time.Second}, // oldest (t=0) leaves at t=60
			{29 * time.Second, false, time.Second},      // a refusal is not counted
			{time.Second, true, 0},                      // t=60: the first event has left
			{0, false, 10 * time.Second},                // t=10's leaves at 70
			{60 * time.Second, true, 0},                 // everything has left
			{0, true, 0},
			{0, true, 0},
			{0, false, 60 * time.Second},
		}
		for i, s := range steps {
			time.Sleep(s.wait)
			ok, retry := l.Allow("a")
			if ok != s.ok || retry != s.retry {
				t.Fatalf("step %d: Allow = %v, %v; want %v, %v", i, ok, retry, s.ok, s.retry)
			}
		}
	})
}

func TestKeysAreIndependent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := mustNew[string](t, Config{Events: 2, Window: time.Hour, MaxKeys: 10})
		for range 2 {
			if ok, _ := l.Allow("a"); !ok {
				t.Fatal("a refused within its limit")
			}
		}
		if ok, _ := l.Allow("a"); ok {
			t.Fatal("a allowed beyond its limit")
		}
		if ok, _ := l.Allow("b"); !ok {
			t.Fatal("b refused because of a")
		}
	})
}

// TestFullTable: with every slot holding a key whose events are still in
// the window, new keys share the overflow bucket and tracked keys keep
// their own counts; once the least recent key's events have left, a new
// key takes its slot.
func TestFullTable(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := mustNew[int](t, Config{Events: 2, Window: time.Minute, MaxKeys: 3})
		for k := range 3 {
			l.Allow(k)
			time.Sleep(time.Second)
		}
		// Keys 3, 4, 5 are new and the table is full: they share one bucket of 2.
		for k, want := range []bool{true, true, false} {
			if ok, _ := l.Allow(3 + k); ok != want {
				t.Fatalf("new key %d while full: Allow = %v, want %v", 3+k, ok, want)
			}
		}
		if keys, over := l.Stats(); keys != 3 || over != 2 {
			t.Fatalf("Stats = %d keys, %d overflowed; want 3, 2", keys, over)
		}
		// A tracked key still has its own room.
		if ok, _ := l.Allow(1); !ok {
			t.Fatal("tracked key 1 refused while new keys overflow")
		}
		// Key 0's only event was at t=0; at t=60 it has left, so key 6 takes
		// key 0's slot (keys 1 and 2 are more recent).
		time.Sleep(57 * time.Second)
		if ok, _ := l.Allow(6); !ok {
			t.Fatal("key 6 refused")
		}
		if keys, over := l.Stats(); keys != 3 || over != 2 {
			t.Fatalf("Stats = %d keys, %d overflowed; want 3, 2 (key 6 tracked)", keys, over)
		}
		// Key 0 is no longer tracked and no slot is free: it lands in the
		// overflow bucket, still full from t=3 until t=63.
		if ok, retry := l.Allow(0); ok || retry != 3*time.Second {
			t.Fatalf("evicted key 0: Allow = %v, %v; want false, 3s (the overflow bucket)", ok, retry)
		}
	})
}

// TestBoundedMemory: a spray of a million distinct keys never tracks more
// than MaxKeys.
func TestBoundedMemory(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := mustNew[int](t, Config{Events: 30, Window: time.Minute, MaxKeys: 1000})
		for k := range 1_000_000 {
			l.Allow(k)
			if k%100_000 == 0 {
				time.Sleep(7 * time.Second)
			}
		}
		if keys, _ := l.Stats(); keys > 1000 {
			t.Fatalf("%d keys tracked, bound 1000", keys)
		}
	})
}

func TestConcurrent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := mustNew[int](t, Config{Events: 100, Window: time.Minute, MaxKeys: 4})
		var mu sync.Mutex
		allowed := map[int]int{}
		var wg sync.WaitGroup
		for g := range 8 {
			wg.Go(func() {
				for range 500 {
					if ok, _ := l.Allow(g % 4); ok {
						mu.Lock()
						allowed[g%4]++
						mu.Unlock()
					}
				}
			})
		}
		wg.Wait()
		for k := range 4 {
			if allowed[k] != 100 {
				t.Errorf("key %d: %d allowed, want exactly 100", k, allowed[k])
			}
		}
	})
}

// TestHighLimitIsCheap: a limit set high to get it out of the way does not
// allocate its ring up front.
func TestHighLimitIsCheap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := mustNew[int](t, Config{Events: 1 << 30, Window: time.Minute, MaxKeys: 1 << 20})
		allocs := testing.AllocsPerRun(100, func() { l.Allow(1) })
		if allocs > 1 {
			t.Fatalf("%v allocations per event of one key", allocs)
		}
		for i := range 100 {
			if ok, _ := l.Allow(1); !ok {
				t.Fatalf("event %d refused under a limit of 2^30", i)
			}
		}
	})
}
