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
	id = LabelID(int(i))
	return id, fmt.Appendf(nil, `{"id":%q,"n":%d}`, id, i)
}

// LabelID is the id of the test label at index i.
func LabelID(i int) string { return fmt.Sprintf("urn:uuid:00000000-0000-4000-8000-%012x", i) }

// VerdictLabel returns a label-shaped document at index i in canonical (JCS) form (members
// sorted, no spaces, ASCII only), its method one of four in turn, its id LabelID(i).
func VerdictLabel(i int) []byte {
	methods := []string{"tool-set-observation", "tool-def-pattern-scan", "tool-set-continuity", "name-threat-match"}
	return fmt.Appendf(nil, `{"credentialSubject":{"method":{"id":"urn:awr:mtl:1:method:%s"},"verdict":"pass"},"id":"%s","type":["VerifiableCredential","VerificationVerdict","MCPTrustLabel"],"validFrom":"2026-09-23T09:00:00Z"}`,
		methods[i%len(methods)], LabelID(i))
}

// AppendVerdictLabels appends to l the n labels VerdictLabel makes from index first on, in
// batches of at most 1000, with ev in the first batch, and returns them.
func AppendVerdictLabels(tb testing.TB, l *log.Log, first, n int, ev []log.Evidence) [][]byte {
	tb.Helper()
	var out [][]byte
	for n > 0 {
		batch := min(n, 1000)
		entries := make([]log.Entry, batch)
		for i := range entries {
			idx := first + len(out)
			label := VerdictLabel(idx)
			out = append(out, label)
			entries[i] = log.Entry{ID: LabelID(idx), Label: label}
		}
		if _, err := l.Append(context.Background(), entries, ev); err != nil {
			tb.Fatalf("appending: %v", err)
		}
		ev, n = nil, n-batch
	}
	return out
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
