package log

import (
	"fmt"
	"hash/maphash"

	"github.com/cockroachdb/pebble"
)

// idFilter is an in-memory Bloom filter over the label ids in the log. The
// sequencer refuses a label id already logged; with the filter, only ids it
// may contain cost a Pebble read (a point read probes every overlapping
// table and was most of an append's cost). Owned by the sequencer.
type idFilter struct {
	seed     maphash.Seed
	bits     []uint64
	n        uint64 // ids added
	capacity uint64 // ids it was sized for; beyond it, rebuild
}

const (
	filterBitsPerID = 10 // about 1% false positives with filterProbes
	filterProbes    = 7
	minFilterIDs    = 1 << 16
)

func newIDFilter(capacity uint64) *idFilter {
	capacity = max(capacity, minFilterIDs)
	words := (capacity*filterBitsPerID + 63) / 64
	return &idFilter{seed: maphash.MakeSeed(), bits: make([]uint64, words), capacity: capacity}
}

func (f *idFilter) probes(id string, visit func(word uint64, mask uint64) bool) bool {
	h := maphash.String(f.seed, id)
	h1, h2 := h, h>>32|h<<32|1
	m := uint64(len(f.bits)) * 64
	for i := uint64(0); i < filterProbes; i++ {
		bit := (h1 + i*h2) % m
		if !visit(bit/64, 1<<(bit%64)) {
			return false
		}
	}
	return true
}

func (f *idFilter) add(id string) {
	f.probes(id, func(w, mask uint64) bool { f.bits[w] |= mask; return true })
	f.n++
}

func (f *idFilter) mayContain(id string) bool {
	return f.probes(id, func(w, mask uint64) bool { return f.bits[w]&mask != 0 })
}

func (f *idFilter) full() bool { return f.n > f.capacity }

// loadIDFilter builds a filter from every label id stored, sized for twice
// as many.
func loadIDFilter(db pebble.Reader, size uint64) (*idFilter, error) {
	f := newIDFilter(2 * size)
	it, err := db.NewIter(&pebble.IterOptions{LowerBound: []byte{prefixLabel}, UpperBound: []byte{prefixLabel + 1}})
	if err != nil {
		return nil, corrupt("label index", err)
	}
	for ok := it.First(); ok; ok = it.Next() {
		f.add(string(it.Key()[1:]))
	}
	if err := it.Close(); err != nil {
		return nil, corrupt("label index", err)
	}
	if f.n != size {
		return nil, corrupt("label index", fmt.Errorf("%d ids for %d entries", f.n, size))
	}
	return f, nil
}
