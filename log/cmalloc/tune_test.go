//go:build cgo && linux

package cmalloc

import "testing"

// TestTuneTakes checks that the C library this binary links accepts both
// settings (glibc does; a C library without them would leave the block
// cache to fragment, which the node's memory test would then catch), and
// that later calls report the first call's outcome.
func TestTuneTakes(t *testing.T) {
	if OperatorTuned() {
		t.Skip("the environment sets glibc's mmap threshold, which Tune leaves alone")
	}
	if !Tune(DefaultMmapThreshold, DefaultMaxMmaps) {
		t.Fatal("the C library refused M_MMAP_THRESHOLD/M_MMAP_MAX")
	}
	if !Tune(1, 1) {
		t.Fatal("a second call changed the outcome")
	}
}

// TestOperatorTuned reads both ways an operator can set the threshold.
func TestOperatorTuned(t *testing.T) {
	t.Setenv("GLIBC_TUNABLES", "glibc.malloc.arena_max=2")
	if OperatorTuned() {
		t.Error("arena_max alone counted as a threshold")
	}
	t.Setenv("GLIBC_TUNABLES", "glibc.malloc.arena_max=2:glibc.malloc.mmap_threshold=65536")
	if !OperatorTuned() {
		t.Error("GLIBC_TUNABLES mmap_threshold not seen")
	}
	t.Setenv("GLIBC_TUNABLES", "")
	t.Setenv("MALLOC_MMAP_THRESHOLD_", "65536")
	if !OperatorTuned() {
		t.Error("MALLOC_MMAP_THRESHOLD_ not seen")
	}
}
