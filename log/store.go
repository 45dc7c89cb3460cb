package log

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/cockroachdb/pebble"
	"github.com/cockroachdb/pebble/bloom"
)

// Pebble key layout. One byte names the record kind; integers are big-endian
// so keys sort in log order.
//
//	'b' bundle index       → C2SP entry bundle of entries [256·index, …) (see bundle.go)
//	'i' label id           → index (8 bytes)
//	't' level index        → tile hashes (W × 32 bytes, W ≤ 256; the same key grows until full)
//	'h' size seq           → head record, every head ever signed
//	'H'                    → latest head record (equal to the last 'h' key)
//	'v' kind 0x00 sri      → evidence body
//	'k'                    → meta: public key (32 bytes) ‖ origin
const (
	prefixBundle   = 'b'
	prefixLabel    = 'i'
	prefixTile     = 't'
	prefixHead     = 'h'
	prefixEvidence = 'v'
)

var (
	keyLatest = []byte{'H'}
	keyMeta   = []byte{'k'}
)

func labelKey(id string) []byte { return append([]byte{prefixLabel}, id...) }

func tileKey(level int, n uint64) []byte {
	return binary.BigEndian.AppendUint64([]byte{prefixTile, byte(level)}, n)
}

func headKey(size, seq uint64) []byte {
	k := binary.BigEndian.AppendUint64([]byte{prefixHead}, size)
	return binary.BigEndian.AppendUint64(k, seq)
}

func evidenceKey(kind, sri string) []byte {
	k := append([]byte{prefixEvidence}, kind...)
	return append(append(k, 0), sri...)
}

// prefixEnd is the first key after every key starting with p.
func prefixEnd(p []byte) []byte {
	end := append([]byte(nil), p...)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] < 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}

// headRecord is a Head as stored, with its sequence number.
type headRecord struct {
	Head
	Seq uint64 // counts every head signed; never decreases
}

// encode: seq ‖ size ‖ root ‖ unix seconds ‖ len(STH) ‖ STH ‖ checkpoint.
func (r *headRecord) encode() []byte {
	b := make([]byte, 0, 60+len(r.STH)+len(r.Checkpoint))
	b = binary.BigEndian.AppendUint64(b, r.Seq)
	b = binary.BigEndian.AppendUint64(b, r.Size)
	b = append(b, r.Root[:]...)
	b = binary.BigEndian.AppendUint64(b, uint64(r.Time.Unix()))
	b = binary.BigEndian.AppendUint32(b, uint32(len(r.STH)))
	b = append(b, r.STH...)
	return append(b, r.Checkpoint...)
}

func decodeHead(b []byte) (*headRecord, error) {
	const fixed = 8 + 8 + 32 + 8 + 4
	if len(b) < fixed {
		return nil, errors.New("head record too short")
	}
	r := &headRecord{}
	r.Seq = binary.BigEndian.Uint64(b)
	r.Size = binary.BigEndian.Uint64(b[8:])
	copy(r.Root[:], b[16:48])
	r.Time = time.Unix(int64(binary.BigEndian.Uint64(b[48:])), 0).UTC()
	n := binary.BigEndian.Uint32(b[56:])
	if uint64(n) > uint64(len(b)-fixed) {
		return nil, errors.New("head record STH length out of range")
	}
	r.STH = append([]byte(nil), b[fixed:fixed+int(n)]...)
	r.Checkpoint = append([]byte(nil), b[fixed+int(n):]...)
	return r, nil
}

// getValue reads key, copying the value; a missing key is ErrNotFound.
func getValue(r pebble.Reader, key []byte) ([]byte, error) {
	v, closer, err := r.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	out := append([]byte(nil), v...)
	return out, closer.Close()
}

// pebbleOptions are tuned for the append path: a large memtable so batches
// of 1 KiB labels rarely stall on flushes, one compaction at a time so the
// sequencer keeps a core, and bloom filters because every append looks up
// its label ids.
func pebbleOptions(cache *pebble.Cache, logger pebble.Logger, readOnly bool) *pebble.Options {
	opts := &pebble.Options{
		Cache:                       cache,
		MemTableSize:                64 << 20,
		MemTableStopWritesThreshold: 2,
		L0CompactionThreshold:       4,
		L0StopWritesThreshold:       32,
		LBaseMaxBytes:               256 << 20,
		MaxConcurrentCompactions:    func() int { return 1 },
		Logger:                      logger,
		ReadOnly:                    readOnly,
		ErrorIfNotExists:            readOnly,
	}
	opts.Levels = make([]pebble.LevelOptions, 7)
	for i := range opts.Levels {
		opts.Levels[i] = pebble.LevelOptions{
			BlockSize:      32 << 10,
			FilterPolicy:   bloom.FilterPolicy(10),
			TargetFileSize: 8 << 20 << i,
		}
	}
	return opts.EnsureDefaults()
}

// pebbleLogger routes Pebble's messages into slog; Pebble's fatal errors
// panic rather than exit, so Open can turn them into a CorruptError.
type pebbleLogger struct {
	logger interface{ Info(string, ...any) }
}

func (p pebbleLogger) Infof(format string, args ...any) {
	p.logger.Info(fmt.Sprintf(format, args...), "component", "pebble")
}

func (p pebbleLogger) Fatalf(format string, args ...any) {
	panic(fmt.Sprintf("pebble: "+format, args...))
}
