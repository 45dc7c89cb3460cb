package cmalloc

import (
	"os"
	"strings"
)

// OperatorTuned reports whether the environment sets glibc's mmap threshold
// (MALLOC_MMAP_THRESHOLD_, or glibc.malloc.mmap_threshold in
// GLIBC_TUNABLES); Tune then leaves the allocator as the operator set it.
func OperatorTuned() bool {
	_, set := os.LookupEnv("MALLOC_MMAP_THRESHOLD_")
	return set || strings.Contains(os.Getenv("GLIBC_TUNABLES"), "glibc.malloc.mmap_threshold")
}
