package format_test

import (
	"bytes"
	"runtime"
	"strings"
	"testing"

	"github.com/histor-observer/histor/log/format"
)

func TestBundleRoundTrip(t *testing.T) {
	var b []byte
	entries := [][]byte{[]byte("a"), bytes.Repeat([]byte{'b'}, format.MaxEntryBytes), []byte(`{"id":"x"}`)}
	for _, e := range entries {
		b = format.AppendBundleEntry(b, e)
	}
	got, err := format.SplitBundle(b, len(entries))
	if err != nil {
		t.Fatal(err)
	}
	for i := range entries {
		if !bytes.Equal(got[i], entries[i]) {
			t.Errorf("entry %d: %q", i, got[i])
		}
	}
	offs, err := format.BundleOffsets(b)
	if err != nil || len(offs) != 3 || !bytes.Equal(format.BundleEntry(b, offs, 2), entries[2]) {
		t.Errorf("BundleOffsets: %v %v", offs, err)
	}
}

func TestBundleRefusals(t *testing.T) {
	one := format.AppendBundleEntry(nil, []byte("abc"))
	full := bytes.Repeat(one, format.TileWidth)
	for name, c := range map[string]struct {
		b    []byte
		want int
	}{
		"empty":                {nil, 1},
		"zero-length entry":    {[]byte{0, 0}, 1},
		"ends inside a length": {append(bytes.Clone(one), 0), 2},
		"entry overruns":       {one[:len(one)-1], 1},
		"257 entries":          {append(bytes.Clone(full), one...), format.TileWidth},
		"fewer than wanted":    {one, 2},
		"more than wanted":     {append(bytes.Clone(one), one...), 1},
		"want 0":               {one, 0},
		"want 257":             {full, format.TileWidth + 1},
	} {
		if _, err := format.SplitBundle(c.b, c.want); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, err := format.SplitBundle(full, format.TileWidth); err != nil {
		t.Errorf("a full bundle: %v", err)
	}
}

// TestBundleSplitIsBounded: a hostile 16 MiB bundle of one-byte entries must be refused after
// 256 entries, not read (and allocated for) to its end.
func TestBundleSplitIsBounded(t *testing.T) {
	body := bytes.Repeat([]byte{0, 1, 'x'}, 16<<20/3)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err := format.SplitBundle(body, format.TileWidth)
	runtime.ReadMemStats(&after)
	if err == nil || !strings.Contains(err.Error(), "after 256 entries") {
		t.Errorf("a bundle with bytes past its 256 entries: err %v", err)
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > 1<<20 {
		t.Errorf("splitting allocated %d bytes, want under 1 MiB", n)
	}
}

func TestAppendBundleEntryPanicsOnBadLength(t *testing.T) {
	for _, n := range []int{0, format.MaxEntryBytes + 1} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("an entry of %d bytes was appended", n)
				}
			}()
			format.AppendBundleEntry(nil, make([]byte, n))
		}()
	}
}

func TestParseHashTile(t *testing.T) {
	data := make([]byte, 3*format.HashSize)
	data[format.HashSize] = 9
	h, err := format.ParseHashTile(data, 3)
	if err != nil || len(h) != 3 || h[1][0] != 9 {
		t.Fatalf("%v %v", h, err)
	}
	for name, c := range map[string]struct {
		data  []byte
		width int
	}{
		"width 0":          {nil, 0},
		"width 257":        {make([]byte, 257*format.HashSize), 257},
		"a byte short":     {data[:len(data)-1], 3},
		"a byte over":      {append(bytes.Clone(data), 0), 3},
		"other width":      {data, 2},
		"partial for full": {data, format.TileWidth},
	} {
		if _, err := format.ParseHashTile(c.data, c.width); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
