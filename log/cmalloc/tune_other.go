//go:build !cgo || !linux

package cmalloc

// Tune does nothing here: without cgo Pebble allocates its cache in the Go
// heap, and other systems' allocators have no such knobs.
func Tune(threshold, maxMmaps int) bool { return false }
