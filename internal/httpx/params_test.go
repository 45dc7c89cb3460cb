package httpx

import (
	"strconv"
	"testing"
)

func TestParseCanonicalUint(t *testing.T) {
	for _, s := range []string{"0", "1", "10", "18446744073709551615"} {
		want, _ := strconv.ParseUint(s, 10, 64)
		if got, ok := ParseCanonicalUint(s); !ok || got != want {
			t.Errorf("parseCanonicalUint(%q) = %d, %v", s, got, ok)
		}
	}
	for _, s := range []string{"", "00", "01", "+1", "-1", " 1", "1 ", "1e3", "0x10", "18446744073709551616", "99999999999999999999", "1_000", "%31"} {
		if got, ok := ParseCanonicalUint(s); ok {
			t.Errorf("parseCanonicalUint(%q) = %d, want refusal", s, got)
		}
	}
}

func TestReadUints(t *testing.T) {
	a, b := Uint{Name: "a"}, Uint{Name: "b"}
	if err := ReadUints("x=zz&a=5&&c", &a, &b); err != nil || !a.Present || a.Value != 5 || b.Present {
		t.Fatalf("readUints: %+v %+v %v", a, b, err)
	}
	for _, q := range []string{"a=1&a=1", "a=", "a", "a=01", "a=-1", "a=1.0", "a=%31"} {
		p := Uint{Name: "a"}
		if err := ReadUints(q, &p); err == nil {
			t.Errorf("readUints(%q) accepted %+v", q, p)
		}
	}
	if err := Require(&Uint{Name: "z"}); err == nil {
		t.Error("require accepted a missing parameter")
	}
}

// FuzzParseCanonicalUint: an accepted number prints back as the same text.
func FuzzParseCanonicalUint(f *testing.F) {
	for _, s := range []string{"0", "01", "18446744073709551615", "18446744073709551616", "-0", "+1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, ok := ParseCanonicalUint(s)
		if ok && strconv.FormatUint(n, 10) != s {
			t.Fatalf("accepted %q as %d", s, n)
		}
		if _, err := strconv.ParseUint(s, 10, 64); err == nil && !ok && (len(s) == 1 || s[0] != '0') {
			t.Fatalf("refused %q, a canonical decimal", s)
		}
	})
}
