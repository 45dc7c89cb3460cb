// Package cmalloc tunes the C allocator that holds Pebble's block cache.
//
// Built with cgo, Pebble allocates every cached block (about 32 KiB here)
// with C malloc. glibc serves allocations of that size from its arenas, and
// a cache that keeps evicting blocks of one size to admit blocks of a
// slightly larger one leaves holes the arena never gives back: a node
// serving a million-leaf log grew from 99 to 139-152 MiB resident with a
// 64 MiB cache. Above the threshold set here each block is its own mapping,
// returned to the kernel when the cache frees it, and the same load peaks at
// 106 MiB at the same speed (docs/PERFORMANCE.md).
//
// The setting is process-wide, so the program decides (cmd/histor calls Tune),
// not the log package; it is applied once, and not at all when the operator
// set the threshold through the environment. Without cgo, or on a C library
// without these knobs, Tune does nothing and says so.
package cmalloc

// Defaults of Tune: blocks of 16 KiB and more get their own mapping, and at
// most 16,384 such mappings exist at once (so a very large cache falls back
// to the arenas long before the kernel's default limit of 65,530 mappings a
// process is near).
const (
	DefaultMmapThreshold = 16 << 10
	DefaultMaxMmaps      = 16384
)
