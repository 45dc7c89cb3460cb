package faultfs

import (
	"strings"
	"sync"
)

// Hold holds one sync of a Pebble WAL (a file ending in .log) until released, so a test can
// read a store while a commit waits to become durable: Pebble shows a batch to reads before
// its WAL sync returns. It holds nothing until armed, then lets skip syncs pass and holds
// the next.
type Hold struct {
	mu       sync.Mutex
	armed    bool
	skip     int
	held     chan struct{}
	release  chan error
	released bool
}

// NewHold returns a Hold that is not armed.
func NewHold() *Hold { return &Hold{held: make(chan struct{}), release: make(chan error, 1)} }

// Arm makes the Hold hold the WAL sync that comes after skip others.
func (h *Hold) Arm(skip int) {
	h.mu.Lock()
	h.armed, h.skip = true, skip
	h.mu.Unlock()
}

// Held is closed once a sync is being held.
func (h *Hold) Held() <-chan struct{} { return h.held }

// Release lets the held sync (or the one to be held) return err; later calls do nothing,
// so a deferred Release(ErrInjected) frees a sync a failed check left held.
func (h *Hold) Release(err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.released {
		h.released = true
		h.release <- err
	}
}

// Inject implements Injector.
func (h *Hold) Inject(op Op, path string, _ int) error {
	if op != Sync || !strings.HasSuffix(path, ".log") || !h.take() {
		return nil
	}
	close(h.held)
	return <-h.release
}

// take says whether this sync is the one to hold.
func (h *Hold) take() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.armed {
		return false
	}
	if h.skip > 0 {
		h.skip--
		return false
	}
	h.armed = false
	return true
}
