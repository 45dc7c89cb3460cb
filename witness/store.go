package witness

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"

	"github.com/cockroachdb/pebble"
	"github.com/cockroachdb/pebble/vfs"

	"github.com/histor-observer/histor/internal/pebbledb"
)

// kv is what the witness needs of its database. commit is atomic and durable: when it
// returns nil every pair is on disk. get and scan show only what a commit acknowledged:
// none of a commit in flight, and none of one that failed (Pebble applies a batch before
// its WAL sync and keeps it when the sync fails; pebbleKV reads through pebbledb.Acked).
// It is an interface so tests can fail chosen writes.
type kv interface {
	get(key []byte) ([]byte, bool, error)
	commit(pairs []kvPair) error
	scan(prefix []byte, fn func(key, value []byte) error) error
	close() error
}

type kvPair struct{ key, value []byte }

// The keys. Origins never hold a control character (they are signed-note key names), so 0x00
// ends one unambiguously.
//
//	s 0x00 origin                 → state: the latest cosigned checkpoint
//	h 0x00 origin 0x00 size(u64)  → history: every checkpoint cosigned, by size
//	e 0x00 id(32)                 → an equivocation bundle
func stateKey(origin string) []byte { return append([]byte("s\x00"), origin...) }

func historyKey(origin string, size uint64) []byte {
	k := append([]byte("h\x00"), origin...)
	k = append(k, 0)
	return binary.BigEndian.AppendUint64(k, size)
}

func evidenceKey(id [32]byte) []byte { return append([]byte("e\x00"), id[:]...) }

// stored is one origin's state: the latest checkpoint this witness cosigned.
type stored struct {
	size      uint64
	root      [32]byte
	cosigned  []byte // text, the log's verified signature lines, this witness's cosignature
	submitted []byte // the note exactly as it was submitted: evidence if the log forks later
}

// encode lays a state out as size ‖ root ‖ len(cosigned) ‖ cosigned ‖ submitted.
func (s stored) encode() []byte {
	b := binary.BigEndian.AppendUint64(nil, s.size)
	b = append(b, s.root[:]...)
	b = binary.BigEndian.AppendUint32(b, uint32(len(s.cosigned)))
	b = append(b, s.cosigned...)
	return append(b, s.submitted...)
}

func decodeStored(b []byte) (stored, error) {
	var s stored
	if len(b) < 8+32+4 {
		return s, errors.New("decoding witness state: too short")
	}
	s.size, s.root = binary.BigEndian.Uint64(b), [32]byte(b[8:40])
	n := binary.BigEndian.Uint32(b[40:])
	rest := b[44:]
	if uint64(n) > uint64(len(rest)) {
		return s, errors.New("decoding witness state: cosigned checkpoint cut short")
	}
	s.cosigned, s.submitted = rest[:n:n], rest[n:]
	return s, nil
}

// pastCheckpoint is a history entry: root ‖ the note as submitted.
func encodePast(root [32]byte, submitted []byte) []byte {
	return append(bytes.Clone(root[:]), submitted...)
}

func decodePast(b []byte) ([32]byte, []byte, error) {
	if len(b) < 32 {
		return [32]byte{}, nil, errors.New("decoding witness history: too short")
	}
	return [32]byte(b[:32]), b[32:], nil
}

// pebbleKV is the witness's Pebble database, every commit synced.
type pebbleKV struct {
	db    *pebble.DB
	guard pebbledb.Guard  // every commit; stopped by the first fatal one or a failed flush
	view  *pebbledb.Acked // every read and commit: reads show only what was acknowledged
}

func openPebble(dir string, fs vfs.FS, logger *slog.Logger) (*pebbleKV, error) {
	p := &pebbleKV{}
	opts := &pebble.Options{Logger: pebbledb.Quiet(logger), FS: fs}
	p.guard.Watch(opts, logger)
	db, err := pebbledb.Open(dir, opts)
	if err != nil {
		return nil, fmt.Errorf("opening witness store %s: %w", dir, err)
	}
	p.db = db
	p.view = pebbledb.NewAcked(db, &p.guard)
	return p, nil
}

func (p *pebbleKV) get(key []byte) (value []byte, ok bool, err error) {
	err = p.view.Read(func(r pebble.Reader) error {
		v, closer, err := r.Get(key)
		if errors.Is(err, pebble.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		defer closer.Close()
		value, ok = bytes.Clone(v), true
		return nil
	})
	return value, ok, err
}

func (p *pebbleKV) commit(pairs []kvPair) error {
	b := p.db.NewBatch()
	defer b.Close()
	for _, kv := range pairs {
		if err := b.Set(kv.key, kv.value, nil); err != nil {
			return err
		}
	}
	// A WAL write that fails is fatal to Pebble: it panics in this goroutine (the request's),
	// and Apply turns that into the error that stops the witness's writes.
	return p.view.Commit(b)
}

// scan reads every pair under prefix, then calls fn with each (fn may read the store).
func (p *pebbleKV) scan(prefix []byte, fn func(key, value []byte) error) error {
	upper := append(bytes.Clone(prefix[:len(prefix)-1]), prefix[len(prefix)-1]+1)
	var pairs []kvPair
	err := p.view.Read(func(r pebble.Reader) error {
		it, err := r.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: upper})
		if err != nil {
			return err
		}
		for ok := it.First(); ok; ok = it.Next() {
			pairs = append(pairs, kvPair{bytes.Clone(it.Key()), bytes.Clone(it.Value())})
		}
		return errors.Join(it.Error(), it.Close())
	})
	if err != nil {
		return err
	}
	for _, kv := range pairs {
		if err := fn(kv.key, kv.value); err != nil {
			return err
		}
	}
	return nil
}

func (p *pebbleKV) close() error { return p.view.Close() }
