package canon

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func addSeeds(f *testing.F) {
	for _, s := range []string{
		`{}`, `[]`, `0`, `-0`, `"\ud83d\ude00"`, `"\ud800"`, `{"a":1,"a":2}`, `1.0`, `1e3`,
		`9007199254740991`, `9007199254740992`, `{"\ue000":[true,false,null],"\U0001F600":"x"}`,
		"\"\x00\"", "\"\xed\xa0\x80\"", `[[[[[]]]]]`, `{"a" : [ 1 , { "b" : "c" } ] }`,
	} {
		f.Add([]byte(s))
	}
	files, _ := filepath.Glob(filepath.Join("testdata", "rfc8785", "*", "*.json"))
	for _, p := range files {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
}

// FuzzParse checks that the parser never panics, that every refusal is a
// *canon.Error, and that it never accepts what encoding/json calls invalid.
func FuzzParse(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		_, err := Parse(b)
		if err != nil {
			var ce *Error
			if !errors.As(err, &ce) {
				t.Fatalf("refusal %v is not a *canon.Error", err)
			}
			return
		}
		if !json.Valid(b) {
			t.Fatalf("accepted %q, which encoding/json calls invalid", b)
		}
	})
}

// FuzzCanonicalize checks that canonical output re-parses and is a fixed
// point, and that it denotes the same value encoding/json reads from the
// input.
func FuzzCanonicalize(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := Canonicalize(b)
		if err != nil {
			return
		}
		again, err := Canonicalize(c)
		if err != nil {
			t.Fatalf("canonical output %q refused: %v", c, err)
		}
		if !bytes.Equal(c, again) {
			t.Fatalf("not a fixed point: %q -> %q", c, again)
		}
		var v1, v2 any
		if json.Unmarshal(b, &v1) != nil || json.Unmarshal(c, &v2) != nil {
			t.Fatalf("encoding/json cannot read %q or %q", b, c)
		}
		// DeepEqual compares floats with ==, so -0 and 0 (RFC 8785 writes
		// -0 as 0) are the same value.
		if !reflect.DeepEqual(v1, v2) {
			t.Fatalf("value changed: %q -> %q", b, c)
		}
	})
}
