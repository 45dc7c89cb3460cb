package log

import (
	"fmt"
	"hash/maphash"
)

// idFilter is an in-memory Bloom filter over the label ids in the log. The
// sequencer refuses a label id already logged; with the filter, only ids it
// may contain cost a store read (a point read probes every overlapping
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

// bit returns probe i's bit for hash h (double hashing).
func (f *idFilter) bit(h, i uint64) uint64 {
	return (h + i*(h>>32|h<<32|1)) % (uint64(len(f.bits)) * 64)
}

func (f *idFilter) add(id string) { f.addHash(maphash.String(f.seed, id)) }

func (f *idFilter) addHash(h uint64) {
	for i := uint64(0); i < filterProbes; i++ {
		b := f.bit(h, i)
		f.bits[b/64] |= 1 << (b % 64)
	}
	f.n++
}

func (f *idFilter) mayContain(id string) bool {
	h := maphash.String(f.seed, id)
	for i := uint64(0); i < filterProbes; i++ {
		b := f.bit(h, i)
		if f.bits[b/64]&(1<<(b%64)) == 0 {
			return false
		}
	}
	return true
}

func (f *idFilter) full() bool { return f.n > f.capacity }

// loadIDFilter builds a filter from every label id stored, sized for twice
// as many.
func loadIDFilter(s kvStore, size uint64) (*idFilter, error) {
	f := newIDFilter(2 * size)
	err := scan(s, []byte{prefixLabel}, []byte{prefixLabel + 1}, func(k, _ []byte) error {
		f.addHash(maphash.Bytes(f.seed, k[1:]))
		return nil
	})
	if err != nil {
		return nil, corrupt("label index", err)
	}
	if f.n != size {
		return nil, corrupt("label index", fmt.Errorf("%d ids for %d entries", f.n, size))
	}
	return f, nil
}
