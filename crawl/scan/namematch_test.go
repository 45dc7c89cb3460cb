package scan

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

func kinds(ms []NameMatch) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.Kind+":"+m.Name)
	}
	return out
}

var registry = []string{
	"io.github.modelcontextprotocol/servers",
	"io.github.alice/slack",
	"io.github.alice/weather-forecast",
	"io.github.bob/mcp",
	"com.example/filesystem",
	"com.example.tools/github-mcp-server",
	"io.github.carol/notes",
}

func TestMatchName(t *testing.T) {
	rs := DefaultRecords()
	cases := []struct {
		name string
		want []string
	}{
		{"io.github.example/evil-mcp", []string{"threat-record:io.github.example/evil-mcp"}},
		{"IO.GITHUB.EXAMPLE/EVIL-MCP", []string{"threat-record:io.github.example/evil-mcp"}},
		{"io.github.example/\u0435vil-mcp", []string{"threat-record-confusable:io.github.example/evil-mcp"}},
		{"io.github.example-drainer7/wallet", []string{`threat-record:^io\.github\.example-drainer[0-9]{0,4}/[a-z0-9._-]{1,100}$`}},
		{"io.github.modeIcontextprotocol/servers", []string{"confusable:io.github.modelcontextprotocol/servers"}},
		{"io.github.m0delcontextprotocol/servers", []string{"confusable:io.github.modelcontextprotocol/servers"}},
		{"io.github.eve/sIack", []string{"confusable:io.github.alice/slack"}},
		{"io.github.eve/slackk", []string{"edit-distance:io.github.alice/slack"}},
		{"io.github.eve/weather-forecats", []string{"edit-distance:io.github.alice/weather-forecast"}},
		{"io.github.eve/github-rncp-server", []string{"confusable:com.example.tools/github-mcp-server"}},
		{"io.github.eve/notes", nil},    // same plain name under another owner: not a lookalike
		{"io.github.alice/slacks", nil}, // same namespace
		{"io.github.eve/mcq", nil},      // too short for edit distance
		{"io.github.eve/weather", nil},  // far from weather-forecast
		{"io.github.eve/slxckk", nil},   // two edits on a short segment
		{"io.github.alice/slack", nil},  // itself
		{"io.github.dave/brand-new-thing", nil},
	}
	x := NewNameIndex(registry)
	for _, c := range cases {
		got := kinds(x.Match(rs, c.name))
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
		if one := kinds(MatchName(rs, c.name, registry)); !slices.Equal(one, got) {
			t.Errorf("%s: MatchName %q differs from the index %q", c.name, one, got)
		}
		wantVerdict := "pass"
		if len(c.want) > 0 {
			wantVerdict = "inconclusive"
		}
		if v := NameVerdict(x.Match(rs, c.name)); v != wantVerdict {
			t.Errorf("%s: verdict %s, want %s", c.name, v, wantVerdict)
		}
	}
}

func TestLookalikesAreCapped(t *testing.T) {
	var names []string
	for i := range 100 {
		names = append(names, fmt.Sprintf("io.github.u%d/weather-tool%c", i, 'a'+rune(i%26)))
	}
	got := NewNameIndex(names).Match(nil, "io.github.eve/weather-toolz")
	if len(got) != maxNameMatches {
		t.Errorf("%d matches, want the cap %d", len(got), maxNameMatches)
	}
}

// The partition index must find exactly what comparing every pair finds.
func TestNameIndexAgreesWithBruteForce(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	alpha := "abcdem-"
	word := func(n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = alpha[r.IntN(len(alpha))]
		}
		return string(b)
	}
	var names []string
	for i := range 3000 {
		names = append(names, fmt.Sprintf("ns%d/%s", i%40, word(4+r.IntN(12))))
	}
	x := NewNameIndex(names)
	for q := range 300 {
		seg := []rune(skeleton(word(4 + r.IntN(12))))
		got := x.nearSegments(seg, "")
		for id, sk := range x.skels {
			if len(seg) < minEditLen || len(sk) < minEditLen {
				continue
			}
			thr := threshold(len(seg), len(sk))
			d := editDistance(seg, sk, thr)
			if gd, ok := got[int32(id)]; (d <= thr) != ok || ok && gd != d {
				t.Fatalf("query %d %q vs %q: brute force %d (thr %d), index %d/%v", q, string(seg), string(sk), d, thr, gd, ok)
			}
		}
	}
}

func TestEditDistance(t *testing.T) {
	cases := []struct {
		a, b        string
		limit, want int
	}{
		{"kitten", "sitting", 3, 3}, {"kitten", "sitting", 2, 3}, {"abc", "abc", 1, 0},
		{"abc", "abd", 1, 1}, {"abc", "", 5, 3}, {"flaw", "lawn", 2, 2}, {"ab", "ba", 2, 2},
	}
	for _, c := range cases {
		if got := editDistance([]rune(c.a), []rune(c.b), c.limit); got != c.want {
			t.Errorf("editDistance(%q, %q, %d) = %d, want %d", c.a, c.b, c.limit, got, c.want)
		}
	}
}

func TestSkeleton(t *testing.T) {
	same := [][2]string{
		{"paypal", "\u0440\u0430ypal"}, {"google", "g00gle"}, {"hello", "he1Io"},
		{"modern", "modem"}, {"www", "vvvvvv"}, {"a_b.c", "a-b-c"}, {"\uff41bc", "abc"}, {"\u03bfpen", "open"},
	}
	for _, p := range same {
		if skeleton(p[0]) != skeleton(p[1]) {
			t.Errorf("skeleton(%q) = %q, skeleton(%q) = %q", p[0], skeleton(p[0]), p[1], skeleton(p[1]))
		}
	}
	if skeleton("slack") == skeleton("stack") {
		t.Error("distinct letters folded together")
	}
}

func TestLoadRecordSet(t *testing.T) {
	var f recordSetFile
	if err := json.Unmarshal(defaultRecordSet, &f); err != nil {
		t.Fatal(err)
	}
	rs := DefaultRecords()
	if rs.Digest() != f.Digest {
		t.Fatalf("digest %s, file states %s", rs.Digest(), f.Digest)
	}
	load := func(f recordSetFile) (*RecordSet, error) {
		f.Digest = ""
		b, err := json.Marshal(f)
		if err != nil {
			t.Fatal(err)
		}
		return LoadRecordSet(b)
	}
	rev := f
	rev.Records = slices.Clone(f.Records)
	slices.Reverse(rev.Records)
	if got, err := load(rev); err != nil || got.Digest() != rs.Digest() {
		t.Errorf("reordered: %v, digest changed", err)
	}
	bad := map[string]func(*Record){
		"name and pattern": func(r *Record) { r.Pattern = "x" },
		"kind":             func(r *Record) { r.Kind = "bad" },
		"date":             func(r *Record) { r.Added = "2026-13-01" },
		"no reference":     func(r *Record) { r.Reference = "" },
		"pattern":          func(r *Record) { r.Name, r.Pattern = "", "(" },
	}
	for name, mut := range bad {
		g := f
		g.Records = slices.Clone(f.Records)
		mut(&g.Records[0])
		if _, err := load(g); err == nil {
			t.Errorf("%s: loaded", name)
		}
	}
	g := f
	g.Records = slices.Clone(f.Records)
	g.Records[0].Reference += "/v2"
	if got, err := load(g); err != nil || got.Digest() == rs.Digest() {
		t.Errorf("changed reference: err %v, digest unchanged %v", err, err == nil && got.Digest() == rs.Digest())
	}
	g.Records = append(g.Records, g.Records[0])
	if _, err := load(g); err == nil {
		t.Error("duplicate name loaded")
	}
	if _, err := LoadRecordSet([]byte(strings.Replace(string(defaultRecordSet), `"version"`, `"version": "x", "version"`, 1))); err == nil {
		t.Error("duplicate member loaded")
	}
}

// synthRegistry makes n names shaped like the registry's: reverse-DNS
// namespaces, a few hundred shared words in the last segment.
func synthRegistry(n int) []string {
	r := rand.New(rand.NewPCG(5, 6))
	words := strings.Fields("mcp server github slack notion weather files search memory browser postgres redis stripe jira linear calendar email docs tools agent fetch git shell time maps")
	word := func() string {
		if r.IntN(2) == 0 {
			return words[r.IntN(len(words))]
		}
		b := make([]byte, 4+r.IntN(6))
		for i := range b {
			b[i] = byte('a' + r.IntN(26))
		}
		return string(b)
	}
	out := make([]string, n)
	for i := range out {
		seg := word() + "-" + word()
		if r.IntN(3) == 0 {
			seg += fmt.Sprintf("-%d", r.IntN(100))
		}
		out[i] = fmt.Sprintf("io.github.user%d/%s", i, seg)
	}
	return out
}

func BenchmarkNameIndex20000(b *testing.B) {
	names := synthRegistry(20000)
	rs := DefaultRecords()
	b.Run("build", func(b *testing.B) {
		for b.Loop() {
			NewNameIndex(names)
		}
	})
	b.Run("match-all", func(b *testing.B) {
		x := NewNameIndex(names)
		b.ResetTimer()
		for b.Loop() {
			for _, n := range names {
				x.Match(rs, n)
			}
		}
	})
}

// fullDistance is the textbook dynamic programme, as a reference.
func fullDistance(a, b []rune) int {
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			c := 1
			if a[i-1] == b[j-1] {
				c = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+c)
		}
	}
	return d[len(a)][len(b)]
}

func TestEditDistanceAgreesWithFullDP(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	word := func() []rune {
		b := make([]rune, r.IntN(12))
		for i := range b {
			b[i] = rune('a' + r.IntN(3))
		}
		return b
	}
	for range 20000 {
		a, b, limit := word(), word(), r.IntN(4)
		want := min(fullDistance(a, b), limit+1)
		if got := editDistance(a, b, limit); got != want {
			t.Fatalf("editDistance(%q, %q, %d) = %d, want %d", string(a), string(b), limit, got, want)
		}
	}
}

// BenchmarkNameBruteForce100 compares 100 queries with every distinct
// skeleton, the O(n²) way the index avoids, as a yardstick for match-all.
func BenchmarkNameBruteForce100(b *testing.B) {
	names := synthRegistry(20000)
	x := NewNameIndex(names)
	for b.Loop() {
		for _, n := range names[:100] {
			q := []rune(skeleton(lastSegment(n)))
			for _, sk := range x.skels {
				editDistance(q, sk, threshold(len(q), len(sk)))
			}
		}
	}
}

func FuzzMatchName(f *testing.F) {
	f.Add("io.github.eve/slackk")
	f.Add("io.github.modeIcontextprotocol/servers")
	f.Add("\xff/\u0435vil-mcp")
	x := NewNameIndex(registry)
	rs := DefaultRecords()
	f.Fuzz(func(t *testing.T, name string) {
		ms := x.Match(rs, name)
		if (len(ms) == 0) != (NameVerdict(ms) == "pass") {
			t.Fatal("verdict disagrees with matches")
		}
		for _, m := range ms {
			if m.Kind == KindEditDistance && (m.Distance < 1 || m.Distance > maxTau) {
				t.Fatalf("distance %d out of range", m.Distance)
			}
		}
	})
}

// A registry crowded with one owner's near-identical names must neither list
// them as lookalikes of each other nor hide another owner's lookalike.
func TestNameIndexCrowdedNamespace(t *testing.T) {
	var names []string
	for i := range 20000 {
		names = append(names, fmt.Sprintf("io.example.gen/server-%06d", i))
	}
	names = append(names, "com.other/server-000002x")
	x := NewNameIndex(names)
	got := x.Match(nil, "io.example.gen/server-000002")
	if len(got) != 1 || got[0].Name != "com.other/server-000002x" || got[0].Distance != 1 {
		t.Fatalf("lookalikes of a crowded owner's name = %+v, want only com.other/server-000002x at distance 1", got)
	}
	if got := x.Match(nil, "org.third/server-000002"); len(got) == 0 {
		t.Fatal("a third owner's name found no lookalikes among 20,000 near-identical names")
	} else if len(got) > maxNameMatches {
		t.Fatalf("%d lookalikes, more than the %d bound", len(got), maxNameMatches)
	}
}

func BenchmarkNameMatchCrowded(b *testing.B) {
	var names []string
	for i := range 20000 {
		names = append(names, fmt.Sprintf("io.example.gen/server-%06d", i))
	}
	x := NewNameIndex(names)
	b.ResetTimer()
	for i := range b.N {
		x.Match(nil, names[i%len(names)])
	}
}
