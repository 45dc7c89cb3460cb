package format

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// MaxEntryBytes is the C2SP tlog-tiles bound on one entry: its length is a uint16.
const MaxEntryBytes = 65535

// An entry bundle (c2sp.org/tlog-tiles) is up to TileWidth entries, each a big-endian uint16
// length and that many bytes. HISTOR's entries are labels and never empty, so a zero length
// is refused: it can only be damage or a bundle from something that is not this log.

// AppendBundleEntry appends entry to bundle b. The entry must be 1..MaxEntryBytes long; the
// log refuses other labels before they reach a bundle, so another length is a bug here and
// panics rather than write a bundle that reads back as other entries.
func AppendBundleEntry(b, entry []byte) []byte {
	if len(entry) == 0 || len(entry) > MaxEntryBytes {
		panic(fmt.Sprintf("format: bundle entry of %d bytes", len(entry)))
	}
	b = binary.BigEndian.AppendUint16(b, uint16(len(entry)))
	return append(b, entry...)
}

// BundleOffsets returns where each entry of bundle b starts, checking that b is exactly a
// sequence of 1..TileWidth non-empty entries. It stops at the first entry past TileWidth, so
// a hostile bundle cannot make it allocate more than TileWidth offsets.
func BundleOffsets(b []byte) ([]int, error) {
	var offs []int
	for off := 0; off < len(b); {
		if len(offs) == TileWidth {
			return nil, fmt.Errorf("%d bytes left after %d entries", len(b)-off, TileWidth)
		}
		if len(b)-off < 2 {
			return nil, errors.New("bundle ends inside a length")
		}
		n := int(binary.BigEndian.Uint16(b[off:]))
		if n == 0 || len(b)-off-2 < n {
			return nil, fmt.Errorf("bad entry length %d at offset %d", n, off)
		}
		offs = append(offs, off)
		off += 2 + n
	}
	if len(offs) == 0 {
		return nil, errors.New("empty bundle")
	}
	return offs, nil
}

// BundleEntry returns entry k of bundle b, given b's offsets from BundleOffsets.
func BundleEntry(b []byte, offs []int, k int) []byte {
	n := int(binary.BigEndian.Uint16(b[offs[k]:]))
	return b[offs[k]+2 : offs[k]+2+n]
}

// SplitBundle cuts an entry bundle into exactly want entries (1..TileWidth), each a subslice
// of b, with nothing left over; a reader knows want from the tile path it asked for.
func SplitBundle(b []byte, want int) ([][]byte, error) {
	if want < 1 || want > TileWidth {
		return nil, fmt.Errorf("splitting bundle: want %d entries, not 1..%d", want, TileWidth)
	}
	offs, err := BundleOffsets(b)
	if err != nil {
		return nil, fmt.Errorf("splitting bundle: %w", err)
	}
	if len(offs) != want {
		return nil, fmt.Errorf("splitting bundle: holds %d entries, want %d", len(offs), want)
	}
	out := make([][]byte, want)
	for k := range out {
		out[k] = BundleEntry(b, offs, k)
	}
	return out, nil
}
