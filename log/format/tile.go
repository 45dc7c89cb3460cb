package format

import "fmt"

// C2SP tlog-tiles geometry: tiles of 2^8 hashes (or entries), so a level-L hash tile holds
// nodes at height 8·L of the tree.
const (
	TileHeight = 8
	TileWidth  = 1 << TileHeight
)

// ParseHashTile parses a hash tile of the given width (TileWidth for a full tile, 1..255 for
// a partial one): exactly width hashes, nothing else.
func ParseHashTile(data []byte, width int) ([][32]byte, error) {
	if width < 1 || width > TileWidth {
		return nil, fmt.Errorf("parsing hash tile: width %d, not 1..%d", width, TileWidth)
	}
	if len(data) != width*HashSize {
		return nil, fmt.Errorf("parsing hash tile: %d bytes, want %d for width %d", len(data), width*HashSize, width)
	}
	out := make([][32]byte, width)
	for i := range out {
		out[i] = [32]byte(data[i*HashSize:])
	}
	return out, nil
}
