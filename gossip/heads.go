package gossip

import (
	"crypto/sha256"
	"slices"
	"sync"

	"github.com/histor-observer/histor/gossip/wire"
)

// Head is a verified head message of one observer's log.
type Head = wire.Head

// Observation is a verified observation digest of one observer.
type Observation = wire.Observation

// heads keeps the newest verified head of each observer; guarded by mu. A kept head's size
// never decreases.
type heads struct {
	mu     sync.Mutex
	latest map[string]*Head    // by did:key
	digest map[string][32]byte // hash of the message kept in latest
}

func newHeads() *heads {
	return &heads{latest: map[string]*Head{}, digest: map[string][32]byte{}}
}

// stale reports, before any signature check, a message that cannot be news: smaller than the
// kept head, or the very message kept.
func (h *heads) stale(did string, size uint64, msg []byte) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	cur := h.latest[did]
	return cur != nil && (size < cur.STH.TreeSize || h.digest[did] == sha256.Sum256(msg))
}

// offer keeps a verified head if it is news: a larger tree, or the same tree with more
// cosigners. At the same size with another root it returns the kept head as conflict and
// keeps it.
func (h *heads) offer(did string, hd *Head) (news bool, conflict *Head) {
	h.mu.Lock()
	defer h.mu.Unlock()
	cur := h.latest[did]
	if cur != nil && hd.STH.TreeSize < cur.STH.TreeSize {
		return false, nil
	}
	if cur != nil && hd.STH.TreeSize == cur.STH.TreeSize {
		if hd.STH.Root != cur.STH.Root {
			return false, cur
		}
		if !moreCosigners(hd.Cosigners, cur.Cosigners) {
			return false, nil
		}
	}
	h.latest[did], h.digest[did] = hd, sha256.Sum256(hd.Raw)
	return true, nil
}

// moreCosigners: b ⊊ a, both sorted.
func moreCosigners(a, b []string) bool {
	if len(a) <= len(b) {
		return false
	}
	for _, n := range b {
		if _, ok := slices.BinarySearch(a, n); !ok {
			return false
		}
	}
	return true
}

func (h *heads) get(did string) *Head {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.latest[did]
}

func (h *heads) all() map[string]*Head {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make(map[string]*Head, len(h.latest))
	for k, v := range h.latest {
		out[k] = v
	}
	return out
}
