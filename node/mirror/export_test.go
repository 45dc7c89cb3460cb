package mirror

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble"
)

// RawViewKeys counts the index keys of did's observations as Pebble's own reads show them,
// past the store's acknowledged reads: a test holding a batch's sync waits on it to know the
// batch is applied.
func RawViewKeys(s *Store, did string) int {
	prefix := []byte("v/" + did + "/")
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: append(prefix[:len(prefix)-1:len(prefix)-1], '0')})
	if err != nil {
		return 0
	}
	defer it.Close()
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		n++
	}
	return n
}

// FillKey is the key of the flush case's fill i: a key no reader of the store looks at.
func FillKey(i int) []byte { return fmt.Appendf(nil, "fill/%08d", i) }

// Fill commits fill i, a kilobyte under FillKey, as the store commits every batch.
func Fill(s *Store, i int) error {
	b := s.db.NewBatch()
	defer b.Close()
	if err := b.Set(FillKey(i), bytes.Repeat([]byte{'f'}, 1<<10), nil); err != nil {
		return err
	}
	return s.commitBatch(b)
}

// Filled says whether the store holds fill i.
func Filled(s *Store, i int) (bool, error) {
	v, closer, err := s.db.Get(FillKey(i))
	if errors.Is(err, pebble.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	defer closer.Close()
	return len(v) == 1<<10, nil
}
