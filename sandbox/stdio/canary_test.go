package stdio

import (
	"errors"
	"strings"
	"testing"

	"github.com/histor-observer/histor/log/canon"
)

func TestArguments(t *testing.T) {
	c := Canary{Run: "abc", DecoyPath: "/home/histor/notes/canary.txt"}
	cases := []struct {
		name, schema string
		want         string // canonical JSON of the arguments, or "skip: <reason substring>"
	}{
		{"empty", `{"type":"object"}`, `{}`},
		{"no schema", `null`, `{}`},
		{"email by name", `{"properties":{"userEmail":{"type":"string"}}}`, `{"userEmail":"canary-abc@histor-trap.invalid"}`},
		{"email by format", `{"properties":{"x":{"type":"string","format":"email"}}}`, `{"x":"canary-abc@histor-trap.invalid"}`},
		{"recipient names", `{"properties":{"to":{},"cc":{},"bcc":{},"recipients":{}}}`,
			`{"bcc":"canary-abc@histor-trap.invalid","cc":"canary-abc@histor-trap.invalid","recipients":"canary-abc@histor-trap.invalid","to":"canary-abc@histor-trap.invalid"}`},
		{"url by name", `{"properties":{"webhook":{"type":"string"}}}`, `{"webhook":"https://histor-trap.invalid/abc"}`},
		{"url by format", `{"properties":{"x":{"type":"string","format":"uri-reference"}}}`, `{"x":"https://histor-trap.invalid/abc"}`},
		{"path", `{"properties":{"targetDir":{"type":"string"}}}`, `{"targetDir":"/home/histor/notes/canary.txt"}`},
		{"text", `{"properties":{"query":{"type":"string"}}}`, `{"query":"histor canary abc"}`},
		{"numbers", `{"properties":{"n":{"type":"integer","minimum":5,"maximum":9},"m":{"type":"number"}}}`, `{"m":1,"n":5}`},
		{"boolean and null", `{"properties":{"b":{"type":"boolean"},"z":{"type":"null"}}}`, `{"b":false,"z":null}`},
		{"nullable type list", `{"properties":{"s":{"type":["null","string"]}}}`, `{"s":"histor canary abc"}`},
		{"array", `{"properties":{"tags":{"type":"array","items":{"type":"string"},"minItems":2}}}`, `{"tags":["histor canary abc","histor canary abc"]}`},
		{"nested object", `{"properties":{"opt":{"properties":{"k":{"type":"boolean"}}}}}`, `{"opt":{"k":false}}`},
		{"safe enum", `{"properties":{"mode":{"type":"string","enum":["fast","slow"]}}}`, `{"mode":"fast"}`},
		{"const", `{"properties":{"v":{"const":"v1"}}}`, `{"v":"v1"}`},
		{"boolean const true", `{"properties":{"b":{"type":"boolean","const":true}}}`, "skip: conflicts"},
		{"enum email", `{"properties":{"mode":{"enum":["ops@example.com"]}}}`, "skip: destination"},
		{"enum url", `{"properties":{"mode":{"enum":["https://example.com"]}}}`, "skip: destination"},
		{"const path", `{"properties":{"mode":{"const":"/etc/passwd"}}}`, "skip: destination"},
		{"const home", `{"properties":{"mode":{"const":"~/.ssh"}}}`, "skip: destination"},
		{"enum against canary", `{"properties":{"to":{"enum":["a","b"]}}}`, "skip: conflicts"},
		{"$ref", `{"properties":{"x":{"$ref":"#/$defs/x"}}}`, "skip: $ref"},
		{"anyOf on root", `{"anyOf":[{}]}`, "skip: anyOf"},
		{"oneOf", `{"properties":{"x":{"oneOf":[{}]}}}`, "skip: oneOf"},
		{"allOf", `{"properties":{"x":{"allOf":[{}]}}}`, "skip: allOf"},
		{"not", `{"properties":{"x":{"not":{}}}}`, "skip: not"},
		{"if", `{"properties":{"x":{"if":{}}}}`, "skip: if"},
		{"pattern", `{"properties":{"x":{"type":"string","pattern":"^a+$"}}}`, "skip: pattern"},
		{"format", `{"properties":{"x":{"type":"string","format":"date-time"}}}`, "skip: format"},
		{"minLength", `{"properties":{"x":{"type":"string","minLength":100}}}`, "skip: string bounds"},
		{"maxLength", `{"properties":{"x":{"type":"string","maxLength":3}}}`, "skip: string bounds"},
		{"exclusive minimum", `{"properties":{"n":{"type":"number","exclusiveMinimum":0}}}`, "skip: exclusiveMinimum"},
		{"fraction minimum", `{"properties":{"n":{"type":"number","minimum":0.5}}}`, "skip: numeric"},
		{"minimum above maximum", `{"properties":{"n":{"type":"integer","minimum":5,"maximum":2}}}`, "skip: numeric"},
		{"unique items", `{"properties":{"a":{"type":"array","uniqueItems":true}}}`, "skip: array"},
		{"too many items", `{"properties":{"a":{"type":"array","minItems":6}}}`, "skip: array"},
		{"required undefined", `{"properties":{},"required":["x"]}`, "skip: not defined"},
		{"required null", `{"properties":{},"required":null}`, "skip: required"},
		{"unknown type", `{"properties":{"x":{"type":"file"}}}`, "skip: unsupported type"},
		{"too deep", `{"properties":{"a":{"properties":{"b":{"properties":{"c":{"properties":{"d":{"properties":{"e":{"properties":{}}}}}}}}}}}}`, "skip: deeper"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			schema, err := canon.ParseDeferringNumbers([]byte(tc.schema), canon.DefaultLimits)
			if err != nil {
				t.Fatalf("schema: %v", err)
			}
			args, err := c.Arguments(schema)
			if reason, isSkip := strings.CutPrefix(tc.want, "skip: "); isSkip {
				var se *SkipError
				if !errors.As(err, &se) || !strings.Contains(se.Reason, reason) {
					t.Errorf("got %v, %v; want a skip mentioning %q", args, err, reason)
				}
				return
			}
			if err != nil {
				t.Fatalf("skipped: %v", err)
			}
			b, err := canon.Encode(args)
			if err != nil || string(b) != tc.want {
				t.Errorf("arguments %s (%v), want %s", b, err, tc.want)
			}
		})
	}
}

// TestArgumentsBounded: at most 20 properties, the required ones first.
func TestArgumentsBounded(t *testing.T) {
	props := map[string]any{}
	for _, k := range []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l", "m", "n", "o", "p", "q", "r", "s", "t", "u", "zz"} {
		props[k] = map[string]any{"type": "boolean"}
	}
	args, err := Canary{Run: "x"}.Arguments(map[string]any{"properties": props, "required": []any{"zz"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := args["zz"]; len(args) != 20 || !ok {
		t.Errorf("%d arguments (zz present: %v), want 20 with the required one", len(args), ok)
	}
}
