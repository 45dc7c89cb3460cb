// Package promset registers a component's Prometheus collectors together and unregisters
// them together, so a component closed and opened again over one registry registers anew,
// and a registration that fails half way leaves nothing behind.
package promset

import (
	"fmt"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// Set is collectors registered with one registerer. Its zero value and nil are an empty set.
type Set struct {
	mu  sync.Mutex
	reg prometheus.Registerer
	cs  []prometheus.Collector
}

// Register registers cs with reg in order; a nil reg registers nothing. If one fails, the
// ones already registered are unregistered and the error names what (e.g. "crawl metrics").
func Register(reg prometheus.Registerer, what string, cs ...prometheus.Collector) (*Set, error) {
	s := &Set{reg: reg}
	if reg == nil {
		return s, nil
	}
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			s.Unregister()
			return nil, fmt.Errorf("registering %s: %w", what, err)
		}
		s.cs = append(s.cs, c)
	}
	return s, nil
}

// Unregister removes the set's collectors from its registerer, once; later calls do nothing.
func (s *Set) Unregister() {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.cs {
		s.reg.Unregister(c)
	}
	s.cs = nil
}
