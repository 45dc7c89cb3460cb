package mirror

import "github.com/cockroachdb/pebble"

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
