//go:build cgo && linux

package cmalloc

/*
#include <malloc.h>

static int histor_tune(int threshold, int maxmaps) {
#if defined(M_MMAP_THRESHOLD) && defined(M_MMAP_MAX)
	if (!mallopt(M_MMAP_THRESHOLD, threshold)) return 0;
	if (!mallopt(M_MMAP_MAX, maxmaps)) return 0;
	return 1;
#else
	return 0;
#endif
}
*/
import "C"

import "sync"

var (
	once    sync.Once
	applied bool
)

// Tune sets the C allocator to map allocations of threshold bytes and more
// on their own, at most maxMmaps at once, unless the operator already tuned
// it through the environment (OperatorTuned). Only the first call has an
// effect; it reports whether the settings were applied.
func Tune(threshold, maxMmaps int) bool {
	once.Do(func() {
		applied = !OperatorTuned() && C.histor_tune(C.int(threshold), C.int(maxMmaps)) == 1
	})
	return applied
}
