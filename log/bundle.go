package log

import "encoding/binary"

// Entries are stored as C2SP entry bundles, one Pebble value per 256
// entries (the last one rewritten as it grows): one key per label instead of
// two halves the memtable work of an append, and a bundle is served as it
// is stored. The bundle format itself (format.AppendBundleEntry,
// format.BundleOffsets) is the one every reader parses.

func bundleKey(n uint64) []byte {
	return binary.BigEndian.AppendUint64([]byte{prefixBundle}, n)
}
