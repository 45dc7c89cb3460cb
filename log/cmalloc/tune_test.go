//go:build cgo && linux

package cmalloc

import "testing"

// TestTuneTakes checks that the C library this binary links accepts both
// settings (glibc does; a C library without them would leave the block
// cache to fragment, which the node's memory test would then catch), and
// that later calls report the first call's outcome.
func TestTuneTakes(t *testing.T) {
	if !Tune(DefaultMmapThreshold, DefaultMaxMmaps) {
		t.Fatal("the C library refused M_MMAP_THRESHOLD/M_MMAP_MAX")
	}
	if !Tune(1, 1) {
		t.Fatal("a second call changed the outcome")
	}
}
