package mtl

import (
	"crypto/sha256"
	"encoding/base64"
	"slices"
	"strings"

	"github.com/histor-observer/histor/log/canon"
)

// ToolSetFromListResult reads the tools array from a tools/list result
// ({"tools":[…]}), a whole JSON-RPC response carrying one, or a bare array.
// Refused number literals are left in the tree as canon.RefusedNumber (see
// the package comment); every other canon refusal is returned as is.
func ToolSetFromListResult(b []byte) ([]any, error) {
	v, err := canon.ParseDeferringNumbers(b, canon.DefaultLimits)
	if err != nil {
		return nil, err
	}
	if a, ok := v.([]any); ok {
		return a, nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, refuse(CodeInput, "", "expected a tools array, a tools/list result or a JSON-RPC response")
	}
	if _, rpc := m["jsonrpc"]; rpc {
		return fromResponse(m)
	}
	return fromResult(m)
}

func fromResponse(m map[string]any) ([]any, error) {
	if e, ok := m["error"]; ok {
		return nil, refuse(CodeInput, "", "the JSON-RPC response is an error, not a tools/list result: %s", summary(e))
	}
	res, ok := m["result"].(map[string]any)
	if !ok {
		return nil, refuse(CodeInput, "", "the JSON-RPC response has no result object")
	}
	return fromResult(res)
}

func fromResult(m map[string]any) ([]any, error) {
	tools, ok := m["tools"].([]any)
	if !ok {
		return nil, refuse(CodeInput, "", "the result has no tools array")
	}
	// MTL/1 §5.1: a listing with more pages is partial and must not be
	// digested; the caller has to drain it first.
	if c, ok := m["nextCursor"].(string); ok && c != "" {
		return nil, refuse(CodeInput, "", "the result is one page of a paginated listing (nextCursor is set); drain every page first")
	}
	return tools, nil
}

// summary renders a JSON-RPC error briefly for a refusal reason.
func summary(e any) string {
	if m, ok := e.(map[string]any); ok {
		if msg, ok := m["message"].(string); ok {
			return msg
		}
	}
	return "no message"
}

// Normalize reduces each tool to the members MTL/1 §5.2 digests and sorts
// them by name in UTF-16 code units (§5.3). The result is a new array; the
// input is not changed.
func Normalize(tools []any) ([]any, error) {
	if len(tools) == 0 {
		return nil, refuse(CodeEmpty, "", "the tool set is empty; there is nothing to pin")
	}
	out := make([]any, len(tools))
	seen := make(map[string]int, len(tools))
	for i, t := range tools {
		e, err := normalizeTool(t, i)
		if err != nil {
			return nil, err
		}
		name := e["name"].(string)
		if j, dup := seen[name]; dup {
			return nil, refuse(CodeDuplicate, name, "duplicate tool name %q at positions %d and %d", name, j, i)
		}
		seen[name] = i
		out[i] = e
	}
	slices.SortFunc(out, func(a, b any) int {
		return canon.CompareUTF16(a.(map[string]any)["name"].(string), b.(map[string]any)["name"].(string))
	})
	return out, nil
}

func normalizeTool(t any, i int) (map[string]any, error) {
	tool, ok := t.(map[string]any)
	if !ok {
		return nil, refuse(CodeNotTool, "", "tool entry %d is not a JSON object", i)
	}
	name, ok := tool["name"].(string)
	if !ok || name == "" {
		return nil, refuse(CodeNotTool, "", "tool entry %d has no non-empty string name", i)
	}
	e := map[string]any{"name": name, "description": "", "inputSchema": map[string]any{}}
	if d, ok := tool["description"].(string); ok {
		e["description"] = d
	}
	if s, ok := tool["inputSchema"].(map[string]any); ok {
		e["inputSchema"] = s
	}
	// Present only if sent as an object: absent and {} are different contracts.
	if s, ok := tool["outputSchema"].(map[string]any); ok {
		e["outputSchema"] = s
	}
	return e, nil
}

// CanonicalToolSet returns the RFC 8785 bytes MTL/1 digests: the normalised,
// sorted array. This is the tool-set evidence a label cites.
func CanonicalToolSet(tools []any) ([]byte, error) {
	entries, err := Normalize(tools)
	if err != nil {
		return nil, err
	}
	// Encoding entry by entry gives the same bytes as encoding the array and
	// lets a refused number name its tool (§5.4 asks for that).
	out := []byte{'['}
	for i, e := range entries {
		b, err := canon.Encode(e)
		if err != nil {
			return nil, entryError(e.(map[string]any)["name"].(string), err)
		}
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, b...)
	}
	return append(out, ']'), nil
}

func entryError(name string, err error) error {
	if canon.IsNumberRefusal(err) {
		return refuse(CodeNumber, name, "tool %q has a JSON number MTL/1 cannot digest reproducibly (%v)", name, err)
	}
	return err
}

// Digest returns the MTL/1 tool-set digest as SRI: "sha256-" and the
// standard base64 of SHA-256 over CanonicalToolSet.
func Digest(tools []any) (string, error) {
	b, err := CanonicalToolSet(tools)
	if err != nil {
		return "", err
	}
	return SRI(b), nil
}

// DigestListResult is ToolSetFromListResult followed by Digest.
func DigestListResult(b []byte) (string, error) {
	tools, err := ToolSetFromListResult(b)
	if err != nil {
		return "", err
	}
	return Digest(tools)
}

// SRI writes SHA-256(b) as a W3C Subresource Integrity string.
func SRI(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256-" + base64.StdEncoding.EncodeToString(sum[:])
}

// ValidSRI reports whether s is an SRI as SRI writes it: "sha256-" and
// the padded standard base64 of exactly 32 bytes, in its one canonical
// spelling (the unused low bits of the last character zero), so two
// spellings of one digest can never address two things.
func ValidSRI(s string) bool {
	b64, ok := strings.CutPrefix(s, "sha256-")
	if !ok || len(b64) != base64.StdEncoding.EncodedLen(sha256.Size) {
		return false
	}
	raw, err := base64.StdEncoding.Strict().DecodeString(b64)
	return err == nil && len(raw) == sha256.Size
}
