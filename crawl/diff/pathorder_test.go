package diff

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
)

func TestNextIndex(t *testing.T) {
	for n := range 1200 {
		var want []string
		for i := range n {
			want = append(want, "["+strconv.Itoa(i)+"]")
		}
		sort.Strings(want)
		var got []string
		for i, ok := nextIndex(-1, n); ok; i, ok = nextIndex(i, n) {
			got = append(got, "["+strconv.Itoa(i)+"]")
			if len(got) > n {
				break
			}
		}
		if !slices.Equal(got, want) {
			t.Fatalf("n=%d: order %v, want %v", n, got, want)
		}
	}
}

// flatPaths is the path diff written the plain way, flattening both trees
// and sorting every path: the merged walk must give the same answer.
func flatPaths(before, after any) (out []PathChange, serialOnly, truncated bool) {
	a, b := flatLeaves(before), flatLeaves(after)
	keys := make([]string, 0, len(a)+len(b))
	for k := range a {
		keys = append(keys, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	serialOnly = true
	found := false
	for _, k := range keys {
		la, inA := a[k]
		lb, inB := b[k]
		if inA && inB && la.text() == lb.text() {
			continue
		}
		found = true
		serialOnly = serialOnly && (!inA || la.serial) && (!inB || lb.serial)
		if len(out) == MaxPaths {
			truncated = true
			continue
		}
		var pa, pb *group
		if inA {
			pa = &la
		}
		if inB {
			pb = &lb
		}
		out = append(out, pathChange(k, pa, pb))
	}
	return out, serialOnly && found, truncated
}

func flatLeaves(v any) map[string]group {
	out := map[string]group{}
	if v != nil {
		flatWalk(out, v, "$", "", false, 0)
	}
	return out
}

func flatWalk(out map[string]group, v any, path, parentKey string, serial bool, depth int) {
	if depth > maxDepth {
		out[path] = group{deep: true, serial: serial}
		return
	}
	switch x := v.(type) {
	case map[string]any:
		if len(x) == 0 {
			out[path] = group{v: x, serial: serial}
		}
		for k, c := range x {
			keyword := !mapKeywords[parentKey]
			s := serial || keyword && (k == "$schema" || k == "additionalProperties")
			name := k
			if !keyword {
				name = ""
			}
			seg, _ := segment(k)
			flatWalk(out, c, path+seg, name, s, depth+1)
		}
	case []any:
		if len(x) == 0 {
			out[path] = group{v: x, serial: serial}
		}
		for i, c := range x {
			flatWalk(out, c, path+"["+strconv.Itoa(i)+"]", "", serial, depth+1)
		}
	default:
		out[path] = group{v: x, serial: serial}
	}
}

// randTree is a small schema-like tree whose member names prefix one another
// in every way that reorders paths.
func randTree(r *rand.Rand, depth int) any {
	keys := []string{"a", "aB", "a$", "a_", "a1", "ab", "a-b", "it's", `x\`, "enum", "enumDescriptions",
		"properties", "additionalProperties", "$schema", "type", ""}
	switch n := r.IntN(10); {
	case depth > 4 || n < 3:
		return []any{int64(r.IntN(3)), "s" + strconv.Itoa(r.IntN(3)), true, nil}[r.IntN(4)]
	case n < 5:
		arr := make([]any, r.IntN(24)>>(2*depth))
		for i := range arr {
			arr[i] = randTree(r, depth+1)
		}
		return arr
	default:
		m := map[string]any{}
		for range r.IntN(6) {
			m[keys[r.IntN(len(keys))]] = randTree(r, depth+1)
		}
		return m
	}
}

func TestPathsMatchFlatDiff(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	runs := 3000
	if testing.Short() {
		runs = 500
	}
	for i := range runs {
		a, b := randTree(r, 0), randTree(r, 0)
		if i%3 == 0 {
			b = mutate(r, a)
		}
		got, gs, gt := paths(a, b, MaxFieldBytes)
		want, ws, wt := flatPaths(a, b)
		if !reflect.DeepEqual(got, want) || gs != ws || gt != wt {
			t.Fatalf("run %d: %v / %v\n got %v %v %v\nwant %v %v %v", i, fmt.Sprint(a), fmt.Sprint(b), got, gs, gt, want, ws, wt)
		}
	}
}

// mutate copies v with a few leaves changed.
func mutate(r *rand.Rand, v any) any {
	switch x := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, c := range x {
			m[k] = mutate(r, c)
		}
		return m
	case []any:
		return slices.Collect(func(yield func(any) bool) {
			for _, c := range x {
				if !yield(mutate(r, c)) {
					return
				}
			}
		})
	}
	if r.IntN(8) == 0 {
		return int64(9)
	}
	return v
}

// A list cut at MaxPaths still says whether every change, listed or not, is
// a serialization one.
func TestSerialOnlyPastTheCut(t *testing.T) {
	props := func(extra bool, typ string) map[string]any {
		m := map[string]any{}
		for i := range MaxPaths + 50 {
			p := map[string]any{"type": "object"}
			if extra {
				p["additionalProperties"] = false
			}
			m[fmt.Sprintf("p%03d", i)] = p
		}
		m["z"] = map[string]any{"type": typ}
		return map[string]any{"properties": m}
	}
	out, serial, trunc := paths(props(true, "string"), props(false, "string"), MaxFieldBytes)
	if len(out) != MaxPaths || !trunc || !serial {
		t.Errorf("serialization-only: %d paths, truncated %v, serial %v", len(out), trunc, serial)
	}
	out, serial, trunc = paths(props(true, "string"), props(false, "number"), MaxFieldBytes)
	if len(out) != MaxPaths || !trunc || serial {
		t.Errorf("a type change past the cut: %d paths, truncated %v, serial %v", len(out), trunc, serial)
	}
}

func TestLongKeySegments(t *testing.T) {
	long := func(c string) string { return strings.Repeat("é", 40) + c + strings.Repeat("x", 1000) }
	a := map[string]any{long("a"): int64(1), long("b"): int64(1), "it's": int64(1)}
	b := map[string]any{long("a"): int64(2), long("b"): int64(1), "it's": int64(2)}
	out, _, _ := paths(a, b, MaxFieldBytes)
	if len(out) != 2 {
		t.Fatalf("changes %+v", out)
	}
	if out[0].Path != `$['it\'s']` {
		t.Errorf("short key written %s", out[0].Path)
	}
	p := out[1].Path
	if len(p) > len("$['']")+2*keyPrefixBytes+len("…")+2*keyHashBytes || !strings.HasPrefix(p, "$['éé") || !strings.Contains(p, "'…") {
		t.Errorf("long key written %q", p)
	}
	sa, _ := segment(long("a"))
	sb, _ := segment(long("b"))
	if sa == sb {
		t.Errorf("two long keys share the segment %s", sa)
	}
}
