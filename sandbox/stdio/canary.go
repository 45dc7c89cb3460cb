package stdio

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/histor-observer/histor/log/canon"
)

// TrapDomain is the domain every canary address and URL is on: reserved
// (.invalid never resolves) and, in a traced run, answered by the traps.
const TrapDomain = "histor-trap.invalid"

// Canary makes the values tool arguments are filled with. Every value
// carries Run, so a value seen leaving the sandbox names this run.
type Canary struct {
	Run       string // the run's tag
	DecoyPath string // a decoy file inside the sandbox, given to path-like arguments
}

// Email is the value of e-mail-like arguments.
func (c Canary) Email() string { return "canary-" + c.Run + "@" + TrapDomain }

// URL is the value of URL-like arguments.
func (c Canary) URL() string { return "https://" + TrapDomain + "/" + c.Run }

// Text is the value of other string arguments.
func (c Canary) Text() string { return "histor canary " + c.Run }

// SkipError says why a tool's schema got no canary arguments. A skipped
// tool is not called and never counts as covered.
type SkipError struct{ Reason string }

func (e *SkipError) Error() string { return e.Reason }

func skip(format string, args ...any) error { return &SkipError{Reason: fmt.Sprintf(format, args...)} }

// Bounds of the schemas canary arguments are built for; anything beyond is
// skipped rather than guessed at.
const (
	maxSchemaDepth = 4
	maxProperties  = 20
	maxArrayItems  = 5
	maxStringLen   = 10000
)

// Keywords whose meaning the generator does not model: a value it made
// could be refused, and a refused call would pass for coverage.
var (
	unsupportedObject = []string{"$ref", "allOf", "anyOf", "oneOf", "not", "if", "dependentRequired", "dependentSchemas"}
	unsupportedValue  = []string{"$ref", "allOf", "anyOf", "oneOf", "not", "pattern", "if", "dependentSchemas"}
	supportedFormats  = []string{"email", "uri", "uri-reference", "url"}
)

// Arguments builds the arguments of one call from a tool's inputSchema
// (HISTOR's rules: a deliberately small subset of JSON Schema, never a
// validator). E-mail-like fields get Email, URL-like fields URL, path-like
// fields DecoyPath, numbers their minimum (else 1), booleans false, other
// strings Text. It returns a *SkipError for what it does not model, and for
// enum or const values that look like a destination: a supplier-chosen
// recipient or path is never used as one.
func (c Canary) Arguments(schema any) (map[string]any, error) {
	return c.object(schema, 0)
}

func (c Canary) object(schema any, depth int) (map[string]any, error) {
	s, _ := schema.(map[string]any)
	if depth > maxSchemaDepth {
		return nil, skip("schema nested deeper than %d", maxSchemaDepth)
	}
	if k := present(s, unsupportedObject); k != "" {
		return nil, skip("unsupported object constraint %s", k)
	}
	props, ok := orEmpty(s, "properties").(map[string]any)
	if !ok {
		return nil, skip("properties is not an object")
	}
	keys, err := argumentNames(s, props)
	if err != nil {
		return nil, err
	}
	args := make(map[string]any, len(keys))
	for _, k := range keys {
		v, err := c.value(k, props[k], depth)
		if err != nil {
			return nil, err
		}
		args[k] = v
	}
	return args, nil
}

// argumentNames returns the required properties, then the others in name
// order, at most maxProperties in all.
func argumentNames(s, props map[string]any) ([]string, error) {
	req, ok := s["required"].([]any)
	if _, present := s["required"]; present && !ok {
		return nil, skip("required is not an array")
	}
	if len(req) > maxProperties {
		return nil, skip("more than %d required properties", maxProperties)
	}
	var keys []string
	for _, r := range req {
		name, ok := r.(string)
		if _, defined := props[name]; !ok || !defined {
			return nil, skip("required property %v is not defined", r)
		}
		if !slices.Contains(keys, name) {
			keys = append(keys, name)
		}
	}
	rest := make([]string, 0, len(props))
	for k := range props {
		if !slices.Contains(keys, k) {
			rest = append(rest, k)
		}
	}
	slices.Sort(rest)
	keys = append(keys, rest...)
	if len(keys) > maxProperties {
		keys = keys[:maxProperties]
	}
	return keys, nil
}

func (c Canary) value(name string, schema any, depth int) (any, error) {
	s, _ := schema.(map[string]any)
	if depth > maxSchemaDepth {
		return nil, skip("schema nested deeper than %d", maxSchemaDepth)
	}
	if k := present(s, unsupportedValue); k != "" {
		return nil, skip("unsupported constraint %s on %s", k, name)
	}
	var v any
	var err error
	switch kind := schemaType(s); kind {
	case "object":
		v, err = c.object(s, depth+1)
	case "array":
		v, err = c.array(name, s, depth)
	case "number", "integer":
		v, err = number(name, s)
	case "boolean":
		v = false
	case "null":
		v = nil
	case "string":
		v, err = c.str(name, s)
	default:
		err = skip("unsupported type %v of %s", kind, name)
	}
	if err != nil {
		return nil, err
	}
	if !allowed(s, v) {
		return nil, skip("the canary for %s conflicts with its enum or const", name)
	}
	return v, nil
}

// schemaType is the type a value is made for: the declared one (the first
// non-null of a list), else object when there are properties, else string.
func schemaType(s map[string]any) any {
	switch t := s["type"].(type) {
	case nil:
		if _, ok := s["properties"]; ok {
			return "object"
		}
		return "string"
	case []any:
		for _, k := range t {
			if k != "null" {
				return k
			}
		}
		return "null"
	default:
		return t
	}
}

func (c Canary) array(name string, s map[string]any, depth int) (any, error) {
	count, ok := orValue(s, "minItems", int64(0)).(int64)
	if !ok {
		return nil, skip("unsupported array bounds on %s", name)
	}
	count = max(count, 1)
	maxItems, ok := orValue(s, "maxItems", count).(int64)
	if !ok || count > maxArrayItems || maxItems < count || s["uniqueItems"] == true {
		return nil, skip("unsupported array bounds on %s", name)
	}
	items := make([]any, count)
	for i := range items {
		v, err := c.value(name, s["items"], depth+1)
		if err != nil {
			return nil, err
		}
		items[i] = v
	}
	return items, nil
}

// number is the minimum (1 without one). Exclusive bounds and multipleOf
// are not modelled; a non-integer bound is not either (canon keeps it as a
// refused number).
func number(name string, s map[string]any) (any, error) {
	for _, k := range []string{"exclusiveMinimum", "exclusiveMaximum", "multipleOf"} {
		if _, ok := s[k]; ok {
			return nil, skip("unsupported numeric bound %s on %s", k, name)
		}
	}
	v, ok := orValue(s, "minimum", int64(1)).(int64)
	if !ok {
		return nil, skip("unsupported numeric bounds on %s", name)
	}
	if hi, ok := orValue(s, "maximum", v).(int64); !ok || v > hi {
		return nil, skip("unsupported numeric bounds on %s", name)
	}
	return v, nil
}

func (c Canary) str(name string, s map[string]any) (any, error) {
	low := strings.ToLower(name)
	format, _ := s["format"].(string)
	var v string
	switch {
	case strings.Contains(low, "email") || slices.Contains([]string{"to", "recipient", "recipients", "cc", "bcc"}, low) || format == "email":
		v = c.Email()
	case containsAny(low, "url", "uri", "href", "endpoint", "link", "webhook") || slices.Contains(supportedFormats[1:], format):
		v = c.URL()
	case containsAny(low, "path", "file", "dir", "folder"):
		v = c.DecoyPath
	default:
		chosen, err := c.supplierString(name, s)
		if err != nil {
			return nil, err
		}
		v = chosen
	}
	lo, okLo := orValue(s, "minLength", int64(0)).(int64)
	hi, okHi := orValue(s, "maxLength", int64(maxStringLen)).(int64)
	if n := int64(utf8.RuneCountInString(v)); !okLo || !okHi || n < lo || n > hi {
		return nil, skip("string bounds of %s", name)
	}
	if f, ok := s["format"]; ok && !slices.Contains(supportedFormats, format) {
		return nil, skip("unsupported format %v of %s", f, name)
	}
	return v, nil
}

// supplierString is the first enum value, else the const, else Text; a
// chosen value that looks like an address or a path is refused.
func (c Canary) supplierString(name string, s map[string]any) (string, error) {
	var chosen any = c.Text()
	if e, ok := s["enum"]; ok {
		if list, ok := e.([]any); ok && len(list) > 0 {
			chosen = list[0]
		}
	} else if k, ok := s["const"]; ok {
		chosen = k
	}
	v, ok := chosen.(string)
	if !ok || strings.Contains(v, "@") || strings.Contains(v, "://") || strings.HasPrefix(v, "/") || strings.HasPrefix(v, "~") {
		return "", skip("supplier-provided destination for %s", name)
	}
	return v, nil
}

// allowed reports whether v satisfies the schema's enum and const.
func allowed(s map[string]any, v any) bool {
	if e, ok := s["enum"]; ok {
		list, _ := e.([]any)
		if !slices.ContainsFunc(list, func(x any) bool { return sameJSON(x, v) }) {
			return false
		}
	}
	if k, ok := s["const"]; ok && !sameJSON(k, v) {
		return false
	}
	return true
}

func sameJSON(a, b any) bool {
	x, err1 := canon.Encode(a)
	y, err2 := canon.Encode(b)
	return err1 == nil && err2 == nil && bytes.Equal(x, y)
}

func present(s map[string]any, keys []string) string {
	for _, k := range keys {
		if _, ok := s[k]; ok {
			return k
		}
	}
	return ""
}

func orEmpty(s map[string]any, k string) any { return orValue(s, k, map[string]any{}) }

func orValue(s map[string]any, k string, def any) any {
	if v, ok := s[k]; ok {
		return v
	}
	return def
}

func containsAny(s string, subs ...string) bool {
	return slices.ContainsFunc(subs, func(sub string) bool { return strings.Contains(s, sub) })
}
