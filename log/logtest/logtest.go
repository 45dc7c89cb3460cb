// Package logtest builds logs for tests and benchmarks of the packages that
// serve them.
package logtest

import (
	"context"
	"fmt"
	"testing"

	"github.com/histor-observer/histor/log"
)

// chunk is how many labels Build appends per call: one synced write each.
const chunk = 16384

// Label returns the deterministic small label Build stores at index i, and
// its id. It is canonical JSON with an "id" member, like a real label.
func Label(i uint64) (id string, label []byte) {
	id = fmt.Sprintf("urn:uuid:00000000-0000-4000-8000-%012x", i)
	return id, fmt.Appendf(nil, `{"id":%q,"n":%d}`, id, i)
}

// Build opens a log in dir (cfg.Dir is replaced) and appends n labels made
// by Label, starting at the log's current size, in large batches.
func Build(tb testing.TB, dir string, n int, cfg log.Config) *log.Log {
	tb.Helper()
	cfg.Dir = dir
	ctx := context.Background()
	l, err := log.Open(ctx, cfg)
	if err != nil {
		tb.Fatalf("opening log: %v", err)
	}
	start := l.Size()
	for done := 0; done < n; {
		k := min(chunk, n-done)
		entries := make([]log.Entry, k)
		for j := range entries {
			id, label := Label(start + uint64(done+j))
			entries[j] = log.Entry{ID: id, Label: label}
		}
		if _, err := l.Append(ctx, entries, nil); err != nil {
			l.Close()
			tb.Fatalf("appending labels: %v", err)
		}
		done += k
	}
	return l
}
