package faultfs

import (
	"errors"
	"sync"
	"syscall"
)

// Switch passes every call until it is armed, then asks its injector: a store opens on a
// sound disk and meets the fault only in what follows. The zero Switch passes everything.
type Switch struct {
	mu  sync.Mutex
	inj Injector
}

// Arm makes inj decide every later call; nil disarms.
func (s *Switch) Arm(inj Injector) {
	s.mu.Lock()
	s.inj = inj
	s.mu.Unlock()
}

// Inject implements Injector.
func (s *Switch) Inject(op Op, path string, n int) error {
	s.mu.Lock()
	inj := s.inj
	s.mu.Unlock()
	if inj == nil {
		return nil
	}
	return inj.Inject(op, path, n)
}

// All asks every injector, so each counts every call; the first error wins.
type All []Injector

// Inject implements Injector.
func (a All) Inject(op Op, path string, n int) error {
	var first error
	for _, inj := range a {
		if err := inj.Inject(op, path, n); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// IsFault reports whether err carries a fault these injectors make: ErrInjected, or the
// ENOSPC of a full disk.
func IsFault(err error) bool {
	return errors.Is(err, ErrInjected) || errors.Is(err, syscall.ENOSPC)
}

// Spread picks at most k call numbers from 1..n, the first and the last among them, so a
// scenario of n calls is failed at k points spread over it.
func Spread(n, k int) []int {
	if n <= k {
		out := make([]int, n)
		for i := range out {
			out[i] = i + 1
		}
		return out
	}
	out := make([]int, 0, k)
	for i := range k {
		out = append(out, 1+i*(n-1)/(k-1))
	}
	return out
}
