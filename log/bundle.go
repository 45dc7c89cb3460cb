package log

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Entries are stored as C2SP entry bundles, one Pebble value per 256
// entries (the last one rewritten as it grows): one key per label instead of
// two halves the memtable work of an append, and a bundle is served as it
// is stored. Each entry is a big-endian uint16 length and the label bytes.

func bundleKey(n uint64) []byte {
	return binary.BigEndian.AppendUint64([]byte{prefixBundle}, n)
}

func appendBundleEntry(b, entry []byte) []byte {
	b = binary.BigEndian.AppendUint16(b, uint16(len(entry)))
	return append(b, entry...)
}

// bundleSplit returns the offsets of the entries in a bundle, checking that
// the bundle is exactly a sequence of entries.
func bundleSplit(b []byte) ([]int, error) {
	var offs []int
	for off := 0; off < len(b); {
		if len(b)-off < 2 {
			return nil, errors.New("bundle ends inside a length")
		}
		n := int(binary.BigEndian.Uint16(b[off:]))
		if n == 0 || len(b)-off-2 < n {
			return nil, fmt.Errorf("bad entry length %d at offset %d", n, off)
		}
		offs = append(offs, off)
		off += 2 + n
		if len(offs) > tileWidth {
			return nil, errors.New("more than 256 entries")
		}
	}
	return offs, nil
}

// bundleEntry returns entry k of a bundle.
func bundleEntry(b []byte, offs []int, k int) []byte {
	n := int(binary.BigEndian.Uint16(b[offs[k]:]))
	return b[offs[k]+2 : offs[k]+2+n]
}
