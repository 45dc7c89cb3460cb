package canon

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

func TestRefusals(t *testing.T) {
	tests := []struct {
		name, in, code string
	}{
		{"duplicate member", `{"a":1,"a":2}`, CodeDuplicate},
		{"duplicate after unescaping", `{"a":1,"\u0061":2}`, CodeDuplicate},
		{"nested duplicate", `[{"x":{"k":true,"k":false}}]`, CodeDuplicate},
		{"fraction", `2340.0`, CodeNonInteger},
		{"fraction in object", `{"latencyMs":2340.0}`, CodeNonInteger},
		{"zero fraction", `0.0`, CodeNonInteger},
		{"exponent", `1e3`, CodeNonInteger},
		{"upper exponent", `1E3`, CodeNonInteger},
		{"signed exponent", `2.34e+3`, CodeNonInteger},
		{"negative exponent", `-1e-3`, CodeNonInteger},
		{"above 2^53-1", `9007199254740992`, CodeOutOfRange},
		{"below -(2^53-1)", `-9007199254740992`, CodeOutOfRange},
		{"beyond int64", `123456789012345678901234567890`, CodeOutOfRange},
		{"lone high surrogate", `"\ud800"`, CodeUnicode},
		{"lone high then char", `"\ud800x"`, CodeUnicode},
		{"high then high", `"\ud800\ud800"`, CodeUnicode},
		{"lone low surrogate", `"\udc00"`, CodeUnicode},
		{"reversed pair", `"\udc00\ud800"`, CodeUnicode},
		{"surrogate in name", `{"\udfff":1}`, CodeUnicode},
		{"raw lone surrogate", "\"\xed\xa0\x80\"", CodeUnicode},
		{"invalid utf-8", "\"\xff\"", CodeUnicode},
		{"truncated utf-8", "\"\xc3\"", CodeUnicode},
		{"overlong utf-8", "\"\xc0\xaf\"", CodeUnicode},
		{"empty", ``, CodeSyntax},
		{"only space", "  \n", CodeSyntax},
		{"trailing data", `{} {}`, CodeSyntax},
		{"trailing comma array", `[1,]`, CodeSyntax},
		{"trailing comma object", `{"a":1,}`, CodeSyntax},
		{"leading zero", `01`, CodeSyntax},
		{"negative leading zero", `-01`, CodeSyntax},
		{"bare minus", `-`, CodeSyntax},
		{"dot without digits", `1.`, CodeSyntax},
		{"exponent without digits", `1e`, CodeSyntax},
		{"plus sign", `+1`, CodeSyntax},
		{"single quotes", `'a'`, CodeSyntax},
		{"unquoted name", `{a:1}`, CodeSyntax},
		{"raw control char", "\"a\x01b\"", CodeSyntax},
		{"raw newline", "\"a\nb\"", CodeSyntax},
		{"bad escape", `"\x"`, CodeSyntax},
		{"short unicode escape", `"\u12"`, CodeSyntax},
		{"non-hex escape", `"\u12g4"`, CodeSyntax},
		{"unterminated string", `"abc`, CodeSyntax},
		{"unterminated array", `[1,2`, CodeSyntax},
		{"unterminated object", `{"a":1`, CodeSyntax},
		{"missing colon", `{"a" 1}`, CodeSyntax},
		{"NaN", `NaN`, CodeSyntax},
		{"truncated literal", `tru`, CodeSyntax},
		{"BOM", "\ufeff{}", CodeSyntax},
		{"too deep", strings.Repeat("[", 65) + strings.Repeat("]", 65), CodeLimit},
		{"too deep objects", strings.Repeat(`{"a":`, 65) + "1" + strings.Repeat("}", 65), CodeLimit},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := Parse([]byte(tt.in))
			var ce *Error
			if !errors.As(err, &ce) {
				t.Fatalf("Parse(%q) = %v, %v; want a *canon.Error %s", tt.in, v, err, tt.code)
			}
			if ce.Code != tt.code {
				t.Fatalf("Parse(%q) refused with %v; want %s", tt.in, err, tt.code)
			}
			if !strings.HasPrefix(err.Error(), tt.code+": ") || !strings.Contains(err.Error(), " at byte ") {
				t.Errorf("error text %q not in the form \"<code>: <reason> at byte N\"", err)
			}
			if _, err := Canonicalize([]byte(tt.in)); err == nil {
				t.Errorf("Canonicalize(%q) accepted what Parse refused", tt.in)
			}
		})
	}
}

func TestBounds(t *testing.T) {
	deep := strings.Repeat("[", 64) + strings.Repeat("]", 64)
	if _, err := Parse([]byte(deep)); err != nil {
		t.Errorf("depth 64 refused: %v", err)
	}
	lim := Limits{MaxDepth: 2, MaxBytes: 10}
	if _, err := ParseWith([]byte(`[[1]]`), lim); err != nil {
		t.Errorf("depth 2 under MaxDepth 2 refused: %v", err)
	}
	if _, err := ParseWith([]byte(`[[[1]]]`), lim); !hasCode(err, CodeLimit) {
		t.Errorf("depth 3 under MaxDepth 2: %v, want %s", err, CodeLimit)
	}
	if _, err := ParseWith([]byte(`"0123456789"`), lim); !hasCode(err, CodeLimit) {
		t.Errorf("12 bytes under MaxBytes 10: %v, want %s", err, CodeLimit)
	}
	if _, err := ParseWith([]byte(`"01234567"`), lim); err != nil {
		t.Errorf("10 bytes under MaxBytes 10 refused: %v", err)
	}
	big := make([]byte, DefaultLimits.MaxBytes+1)
	for i := range big {
		big[i] = ' '
	}
	big[0] = '0'
	if _, err := Parse(big); !hasCode(err, CodeLimit) {
		t.Errorf("input over 4 MiB: %v, want %s", err, CodeLimit)
	}
}

func hasCode(err error, code string) bool {
	var ce *Error
	return errors.As(err, &ce) && ce.Code == code
}

func TestParseValues(t *testing.T) {
	v, err := Parse([]byte(` {"s":"a\u00e9\ud83d\ude00\/","n":-9007199254740991,"m":9007199254740991,"z":-0,"b":[true,false,null],"o":{}} `))
	if err != nil {
		t.Fatal(err)
	}
	m := v.(map[string]any)
	if m["s"] != "aé😀/" {
		t.Errorf("s = %q", m["s"])
	}
	if m["n"] != int64(-MaxSafeInteger) || m["m"] != int64(MaxSafeInteger) || m["z"] != int64(0) {
		t.Errorf("integers = %v %v %v", m["n"], m["m"], m["z"])
	}
	b := m["b"].([]any)
	if len(b) != 3 || b[0] != true || b[1] != false || b[2] != nil {
		t.Errorf("b = %v", b)
	}
	if o, ok := m["o"].(map[string]any); !ok || len(o) != 0 {
		t.Errorf("o = %#v", m["o"])
	}
}

func TestCanonicalize(t *testing.T) {
	tests := []struct{ in, want string }{
		{`{"b":1,"a":2}`, `{"a":2,"b":1}`},
		{` [ 1 , -0 , "x" ] `, `[1,0,"x"]`},
		{`"\u0000\u001f\b\t\n\f\r\"\\\/\u007f\u2028"`, "\"\\u0000\\u001f\\b\\t\\n\\f\\r\\\"\\\\/\u007f\u2028\""},
		{`"\u00E9"`, `"é"`},
		{`{"\ue000":1,"\ud83d\ude00":2}`, "{\"\U0001F600\":2,\"\ue000\":1}"},
		{`{"aa":1,"a":2,"":3}`, `{"":3,"a":2,"aa":1}`},
		{`{"a":{"d":[],"c":{}}}`, `{"a":{"c":{},"d":[]}}`},
	}
	for _, tt := range tests {
		got, err := Canonicalize([]byte(tt.in))
		if err != nil {
			t.Errorf("Canonicalize(%q): %v", tt.in, err)
			continue
		}
		if string(got) != tt.want {
			t.Errorf("Canonicalize(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestCompareUTF16(t *testing.T) {
	// Sorted in UTF-16 code unit order; code point order would put U+E000,
	// U+FB33 and U+FFFF before U+10000 and U+1F600.
	sorted := []string{"", "A", "a", "é", "\u20ac", "\U00010000", "\U0001F600", "\U00100000", "\ue000", "\ufb33", "\uffff"}
	for i := range sorted {
		for j := range sorted {
			got := CompareUTF16(sorted[i], sorted[j])
			if (i < j && got >= 0) || (i > j && got <= 0) || (i == j && got != 0) {
				t.Errorf("CompareUTF16(%q, %q) = %d", sorted[i], sorted[j], got)
			}
		}
	}
}

func TestMarshal(t *testing.T) {
	got, err := Marshal(map[string]any{"z": "<&>", "a": []int{3, 1}, "m": struct {
		B int    `json:"b"`
		A string `json:"a"`
	}{2, "x"}})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"a":[3,1],"m":{"a":"x","b":2},"z":"<&>"}`; string(got) != want {
		t.Errorf("Marshal = %s, want %s", got, want)
	}
	if _, err := Marshal(map[string]any{"f": 1.5}); !hasCode(err, CodeNonInteger) {
		t.Errorf("Marshal of a float: %v, want %s", err, CodeNonInteger)
	}
	if _, err := Marshal(int64(1) << 60); !hasCode(err, CodeOutOfRange) {
		t.Errorf("Marshal of 2^60: %v, want %s", err, CodeOutOfRange)
	}
}

func TestEncodeRefuses(t *testing.T) {
	for _, v := range []any{1.5, int64(1) << 53, "\xff", map[string]any{"a": struct{}{}}} {
		if _, err := Encode(v); err == nil {
			t.Errorf("Encode(%#v) accepted", v)
		}
	}
}

func TestIsNumberRefusal(t *testing.T) {
	for in, want := range map[string]bool{`1.0`: true, `1e1`: true, `9007199254740992`: true, `{"a":1,"a":1}`: false, `[`: false} {
		_, err := Parse([]byte(in))
		if got := IsNumberRefusal(err); got != want {
			t.Errorf("IsNumberRefusal(Parse(%q)) = %v, want %v", in, got, want)
		}
	}
	if IsNumberRefusal(nil) {
		t.Error("IsNumberRefusal(nil) = true")
	}
}

func TestParseDeferringNumbers(t *testing.T) {
	v, err := ParseDeferringNumbers([]byte(`{"keep":[1,2],"drop":{"x":2340.0,"y":9007199254740992}}`), DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	m := v.(map[string]any)
	drop := m["drop"].(map[string]any)
	x, ok := drop["x"].(RefusedNumber)
	if !ok || x.Literal != "2340.0" || x.Err.Code != CodeNonInteger {
		t.Errorf("x = %#v, want a RefusedNumber 2340.0 with %s", drop["x"], CodeNonInteger)
	}
	if y, ok := drop["y"].(RefusedNumber); !ok || y.Err.Code != CodeOutOfRange {
		t.Errorf("y = %#v, want a RefusedNumber with %s", drop["y"], CodeOutOfRange)
	}
	if _, err := Encode(m); !IsNumberRefusal(err) {
		t.Errorf("Encode with refused numbers: %v, want a number refusal", err)
	}
	delete(m, "drop")
	if got, err := Encode(m); err != nil || string(got) != `{"keep":[1,2]}` {
		t.Errorf("Encode after dropping = %s, %v", got, err)
	}
	// Other refusals still happen at parse time.
	for _, in := range []string{`{"a":1.5,"a":2}`, `["\ud800",1.5]`, `[1.5,]`} {
		if _, err := ParseDeferringNumbers([]byte(in), DefaultLimits); err == nil {
			t.Errorf("ParseDeferringNumbers(%q) accepted", in)
		}
	}
}

// TestAppend holds Append to Encode: the same bytes after any prefix, and
// the same refusals.
func TestAppend(t *testing.T) {
	values := []any{nil, true, int64(-3), 7, "a\u2028\x00\U0001f600", []any{}, map[string]any{},
		1.5, int64(1) << 53, "\xff", map[string]any{"a": struct{}{}}}
	for _, in := range crossCheckInputs(200) {
		v, err := Parse([]byte(in))
		if err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		values = append(values, v)
	}
	for _, v := range values {
		want, werr := Encode(v)
		for _, prefix := range [][]byte{nil, []byte("x,"), make([]byte, 3, 64)} {
			got, gerr := Append(prefix, v)
			switch {
			case (gerr == nil) != (werr == nil) || (gerr != nil && gerr.Error() != werr.Error()):
				t.Errorf("Append(%#v) error %v, Encode error %v", v, gerr, werr)
			case gerr != nil:
				if got != nil {
					t.Errorf("Append(%#v) refused but returned %q", v, got)
				}
			case !bytes.Equal(got, append(bytes.Clone(prefix), want...)):
				t.Errorf("Append(%q, %#v) = %q, want the prefix then %q", prefix, v, got, want)
			}
		}
	}
}

// TestMarshalPlain: strings keep "<", ">" and "&" as written, unlike json.Marshal, in the
// compact form and the indented one a command prints.
func TestMarshalPlain(t *testing.T) {
	v := map[string]any{"description": "<b>fetch</b> & go", "n": 1}
	got, err := MarshalPlain(v)
	if err != nil || string(got) != `{"description":"<b>fetch</b> & go","n":1}` {
		t.Fatalf("MarshalPlain: %s, %v", got, err)
	}
	got, err = MarshalPlainIndent(v, "  ")
	if want := "{\n  \"description\": \"<b>fetch</b> & go\",\n  \"n\": 1\n}\n"; err != nil || string(got) != want {
		t.Fatalf("MarshalPlainIndent: %q, %v; want %q", got, err, want)
	}
	if _, err := MarshalPlainIndent(func() {}, "  "); err == nil {
		t.Fatal("a func marshalled")
	}
}
