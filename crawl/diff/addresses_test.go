package diff

import (
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"
)

// TestAddressesIn pins what counts as an outside address, case by case
// as HISTOR's diffing.py finds them (each expectation was checked against
// it): URL hosts, e-mail addresses, bare domains unless they read as a
// file name, IPv4 addresses, with ASCII-only boundaries.
func TestAddressesIn(t *testing.T) {
	for _, tc := range []struct {
		text string
		want []string
	}{
		{"see https://api.example.com/v1 and mail ops@corp.example.net", []string{"api.example.com", "ops@corp.example.net"}},
		{"visit evil.example.io now", []string{"evil.example.io"}},
		{"ip 10.1.2.3, not 1.2.3.4.5 or 999.1.1.1", []string{"10.1.2.3"}},
		{"result.json and upload.example.pl", []string{"upload.example.pl"}},
		{"http://user:pass@host.example:8080/x", []string{"host.example"}}, // userinfo is no e-mail address
		{"https://[2001:db8::1]/p", []string{"[2001:db8::1]"}},
		{"中文api.example.cn中文", []string{"api.example.cn"}}, // flush against CJK text
		{"x@y.com.", []string{"x@y.com"}},
		{"..example.com..", nil},
		{"HTTPS://UPPER.Example.COM", []string{"upper.example.com"}},
		{"https://-weird-.example.com-", nil},
		{"https://x", []string{"x"}},
		{"٣.٣.٣.٣", []string{"٣.٣.٣.٣"}}, // Python's \d: any decimal digit
		{"email: first.last+tag@sub.domain.example.travel!", []string{"first.last+tag@sub.domain.example.travel"}},
		{"foo.bar1 a.b_ c.d-", nil},
		{"no addresses here, only words", nil},
	} {
		found := map[string]bool{}
		addressesIn(tc.text, found)
		var got []string
		for a := range found {
			got = append(got, a)
		}
		sort.Strings(got)
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%q: %q, want %q", tc.text, got, tc.want)
		}
	}
}

// TestNewAddresses: only addresses the new set mentions and the old did
// not, from names, descriptions and schema keys and strings (never from
// members MTL/1 does not digest), listed up to MaxNewAddresses and
// counted in full.
func TestNewAddresses(t *testing.T) {
	before := index([]any{map[string]any{"name": "a", "description": "calls api.example.com",
		"inputSchema": map[string]any{"default": "https://old.example.org/x"}}})
	after := index([]any{
		map[string]any{"name": "a", "description": "calls api.example.com/v2 and exfil.example.net",
			"inputSchema": map[string]any{"properties": map[string]any{"to@mail.example.com": true}, "default": "https://old.example.org/y"},
			"title":       "ignored.example.com", "outputSchema": []any{"not-an-object.example.com"}},
		map[string]any{"name": "b.example.dev", "description": 42, "outputSchema": map[string]any{"enum": []any{"10.0.0.7"}}},
	})
	got, total := newAddresses(before, after)
	want := []string{"10.0.0.7", "b.example.dev", "exfil.example.net", "to@mail.example.com"}
	if !reflect.DeepEqual(got, want) || total != len(want) {
		t.Errorf("new addresses %q (%d), want %q", got, total, want)
	}
	var many []string
	for i := range MaxNewAddresses + 7 {
		many = append(many, fmt.Sprintf("h%03d.example.com", i))
	}
	after = index([]any{map[string]any{"name": "a", "description": strings.Join(many, " ")}})
	got, total = newAddresses(before, after)
	if len(got) != MaxNewAddresses || total != MaxNewAddresses+7 || got[0] != "h000.example.com" {
		t.Errorf("%d listed of %d, first %q; want %d of %d", len(got), total, got[0], MaxNewAddresses, MaxNewAddresses+7)
	}
}

// BenchmarkAddressesIn: a hostile text of the longest length scanned,
// made of nothing but domain matches.
func BenchmarkAddressesIn(b *testing.B) {
	text := strings.Repeat("ab.cd ", maxScanRunes/6)
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		addressesIn(text, map[string]bool{})
	}
}
