package audit

import (
	"runtime"
	"strings"
	"testing"
)

// TestSplitBundleStopsAtWant: a bundle of zero bytes reads as one empty entry per two bytes.
// The split must stop once it has the entries it wants, not allocate for millions of them.
func TestSplitBundleStopsAtWant(t *testing.T) {
	body := make([]byte, 16<<20)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err := splitBundle(body, 256)
	runtime.ReadMemStats(&after)
	if err == nil || !strings.Contains(err.Error(), "after the 256 entries") {
		t.Errorf("a bundle with bytes past its 256 entries: err %v", err)
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > 1<<20 {
		t.Errorf("splitting allocated %d bytes, want under 1 MiB", n)
	}
}
