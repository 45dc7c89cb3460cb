package log

import (
	"encoding/binary"
	"errors"
	"time"
)

// Store key layout. One byte names the record kind; integers are big-endian
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
