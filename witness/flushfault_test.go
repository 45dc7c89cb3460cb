package witness

import (
	"bytes"
	"fmt"
	"log/slog"
	"testing"

	"github.com/cockroachdb/pebble/vfs"

	"github.com/histor-observer/histor/internal/faultfs/faulttest"
)

// stoppableKV is the witness's store as faulttest plays it.
type stoppableKV struct{ *pebbleKV }

func (s stoppableKV) Stopped() error { return s.guard.Stopped() }
func (s stoppableKV) Close() error   { return s.close() }

func fillPair(i int) kvPair {
	return kvPair{fmt.Appendf(nil, "fill/%08d", i), bytes.Repeat([]byte{'f'}, 1<<10)}
}

// TestFlushFails: the witness's store on a disk that takes its WAL but no table stops at
// the first failed flush and says why (the witness then refuses to cosign, as after a failed
// write), refuses later commits at once, and reopens after a crash with every commit
// acknowledged (faulttest.FlushFails).
func TestFlushFails(t *testing.T) {
	faulttest.FlushFails(t, faulttest.Scenario[stoppableKV]{
		Dir: "w",
		Open: func(fsys vfs.FS) (stoppableKV, error) {
			p, err := openPebble("w", fsys, slog.New(slog.DiscardHandler))
			return stoppableKV{p}, err
		},
		Fill: func(s stoppableKV, i int) error { return s.commit([]kvPair{fillPair(i)}) },
		Filled: func(s stoppableKV, i int) (bool, error) {
			v, ok, err := s.get(fillPair(i).key)
			return ok && bytes.Equal(v, fillPair(i).value), err
		},
		Again: func(s stoppableKV) error { return s.commit([]kvPair{fillPair(1 << 30)}) },
	})
}
