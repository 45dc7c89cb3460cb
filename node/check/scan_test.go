package check

import (
	"fmt"
	"strings"
	"testing"
)

func scanOf(t *testing.T, f *checkFixture, remote, tools string) map[string]any {
	t.Helper()
	a := f.answer(t, remote, body(`"endpoint":"`+endpointOK+`"`, `"tools":`+tools))
	ps, _ := a["patternScan"].(map[string]any)
	return ps
}

func TestCheckScanFindsMatches(t *testing.T) {
	f := newCheckFixture(t, nil)
	ps := scanOf(t, f, "192.0.2.1:1", toolsNow)
	ms, _ := ps["matches"].([]any)
	if ps["status"] != "scanned" || ps["block"].(float64) < 1 || len(ms) == 0 {
		t.Fatalf("patternScan of a set with <system> = %v", ps)
	}
	m := ms[0].(map[string]any)
	if m["code"] != "TOOL_DEF_INJECTION" || m["tool"] != "echo" || m["where"] != "description" || m["tier"] != "block" {
		t.Errorf("match = %v", m)
	}
}

// TestCheckScanCache: a set the node observed is scanned once and then read
// from the cache without spending budget; a stranger's set is scanned and
// forgotten, so asking again spends budget again.
func TestCheckScanCache(t *testing.T) {
	f := newCheckFixture(t, func(c *Config) { c.ScansPerHour = 2 })
	c := f.c
	steps := []struct {
		tools, status string
		cached        int
	}{
		{toolsNow, "scanned", 1}, // fresh scan 1, observed: cached
		{toolsNow, "scanned", 1}, // from the cache, no budget
		{toolsNew, "scanned", 1}, // fresh scan 2, a stranger's: not cached
		{toolsNew, "not-scanned", 1},
		{toolsNow, "scanned", 1}, // still cached, budget or not
	}
	for i, s := range steps {
		ps := scanOf(t, f, "192.0.2.1:1", s.tools)
		if ps["status"] != s.status || len(c.cache.m) != s.cached {
			t.Fatalf("step %d: patternScan %v, %d cached; want %s, %d", i, ps, len(c.cache.m), s.status, s.cached)
		}
	}
	if ps := scanOf(t, f, "192.0.2.1:1", toolsNew); !strings.Contains(ps["note"].(string), "3600 seconds") {
		t.Errorf("budget note = %q, want the hour's wait", ps["note"])
	}
	if ps := scanOf(t, f, "192.0.2.2:1", toolsNew); ps["status"] != "scanned" {
		t.Errorf("another client's scan: %v", ps)
	}
}

func TestCheckScanBusy(t *testing.T) {
	f := newCheckFixture(t, nil)
	c := f.c
	c.slot <- struct{}{} // a scan in progress
	ps := scanOf(t, f, "192.0.2.1:1", toolsNew)
	<-c.slot
	if ps["status"] != "busy" || ps["note"] != noteBusy {
		t.Errorf("while a scan runs: %v", ps)
	}
	if ps := scanOf(t, f, "192.0.2.1:1", toolsNew); ps["status"] != "scanned" {
		t.Errorf("after it: %v", ps)
	}
}

func TestCheckScansOff(t *testing.T) {
	f := newCheckFixture(t, func(c *Config) { c.ScansPerHour = -1 })
	if ps := scanOf(t, f, "192.0.2.1:1", toolsNew); ps["status"] != "not-scanned" {
		t.Errorf("fresh scans off: %v", ps)
	}
}

// TestCheckScanListsAtMost200: matches beyond 200 are counted, not listed.
func TestCheckScanListsAtMost200(t *testing.T) {
	f := newCheckFixture(t, nil)
	tools := make([]string, 250)
	for i := range tools {
		tools[i] = fmt.Sprintf(`{"name":"t%03d","description":"<system> x"}`, i)
	}
	ps := scanOf(t, f, "192.0.2.1:1", "["+strings.Join(tools, ",")+"]")
	ms := ps["matches"].([]any)
	if len(ms) != maxCheckMatches || ps["truncated"] != 250.0 || ps["block"] != 250.0 {
		t.Errorf("listed %d, truncated %v, block %v; want 200, 250, 250", len(ms), ps["truncated"], ps["block"])
	}
}

func TestScanCacheBound(t *testing.T) {
	c := newScanCache(100)
	for i := range 50 {
		c.put(fmt.Sprint(i), "ps", make([]byte, 30))
		if c.bytes > 100 || len(c.m) > 3 {
			t.Fatalf("after %d puts: %d bytes in %d entries, bound 100", i+1, c.bytes, len(c.m))
		}
		if _, ok := c.get(fmt.Sprint(i), "ps"); !ok {
			t.Fatalf("entry %d missing right after put", i)
		}
	}
	c.put("big", "ps", make([]byte, 101))
	if _, ok := c.get("big", "ps"); ok {
		t.Error("an entry over the whole bound was kept")
	}
}
