package diff_test

import (
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/histor-observer/histor/crawl/diff"
	"github.com/histor-observer/histor/internal/raceflag"
)

// hostilePair is a tool set and its successor in which one property, named
// by a 64 KiB key, holds an enum of 4,000 zeros: every leaf's path repeats
// the key.
func hostilePair(t testing.TB) (before, after []any) {
	t.Helper()
	key := strings.Repeat("k", 64<<10)
	enum := strings.TrimSuffix(strings.Repeat("0,", 4000), ",")
	before = tools(t, `[{"name":"x","inputSchema":{"type":"object"}}]`)
	after = tools(t, `[{"name":"x","inputSchema":{"type":"object","properties":{"`+key+`":{"enum":[`+enum+`]}}}}]`)
	return before, after
}

// allocated is the bytes f allocates.
func allocated(f func()) uint64 {
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	f()
	runtime.ReadMemStats(&m1)
	return m1.TotalAlloc - m0.TotalAlloc
}

// Bounds the hostile diff must keep: its input is 74 KB.
const (
	hostileMaxAlloc   = 4 << 20
	hostileMaxSummary = 64 << 10
)

func TestHostileSchemaBounded(t *testing.T) {
	a, b := hostilePair(t)
	var summary []byte
	n := allocated(func() {
		var err error
		if summary, err = json.Marshal(diff.Compare(a, b)); err != nil {
			t.Fatal(err)
		}
	})
	t.Logf("summary %d bytes, %d bytes allocated", len(summary), n)
	if len(summary) > hostileMaxSummary {
		t.Errorf("summary is %d bytes, over %d", len(summary), hostileMaxSummary)
	}
	if n > hostileMaxAlloc {
		t.Errorf("diff allocated %d bytes, over %d", n, hostileMaxAlloc)
	}
	if !strings.Contains(string(summary), `"note":"truncated at`) {
		t.Error("the cut path list has no truncation marker")
	}
}

// manyDeepTools is n tools whose successors each add 200 leaves under a path
// of five 60-byte names: each field's list is cut by bytes, and the lists
// together by MaxChangeBytes.
func manyDeepTools(n int) (before, after []any) {
	for i := range n {
		name := fmt.Sprintf("t%04d", i)
		var v any = map[string]any{"enum": make([]any, 200)}
		for l := range 5 {
			v = map[string]any{strings.Repeat(string(rune('a'+l)), 60): v}
		}
		before = append(before, map[string]any{"name": name, "inputSchema": map[string]any{}})
		after = append(after, map[string]any{"name": name, "inputSchema": v})
	}
	return before, after
}

func TestManyToolsBounded(t *testing.T) {
	if raceflag.Enabled {
		t.Skip("bounds allocated bytes, which the race detector's instrumentation inflates")
	}
	a, b := manyDeepTools(400)
	var summary []byte
	n := allocated(func() {
		var err error
		if summary, err = json.Marshal(diff.Compare(a, b)); err != nil {
			t.Fatal(err)
		}
	})
	t.Logf("summary %d bytes, %d bytes allocated", len(summary), n)
	if len(summary) > 2*diff.MaxChangeBytes {
		t.Errorf("summary is %d bytes, over %d", len(summary), 2*diff.MaxChangeBytes)
	}
	if n > 32<<20 {
		t.Errorf("diff allocated %d bytes, over %d", n, 32<<20)
	}
	c := diff.Compare(a, b)
	last := c.Modified[len(c.Modified)-1].Fields[0]
	if len(c.Modified) != 400 || !last.Truncated || len(last.Paths) != 0 {
		t.Errorf("%d tools modified; the last field has %d paths, truncated %v", len(c.Modified), len(last.Paths), last.Truncated)
	}
}
