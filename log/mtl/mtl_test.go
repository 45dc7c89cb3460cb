package mtl

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
		{"empty array", `[]`, CodeEmpty},
		{"empty result", `{"tools":[]}`, CodeEmpty},
		{"tool not an object", `[{"name":"a"},"b"]`, CodeNotTool},
		{"tool is null", `[null]`, CodeNotTool},
		{"tool is a refused number", `[1.5]`, CodeNotTool},
		{"nameless tool", `[{"description":"x"}]`, CodeNotTool},
		{"empty name", `[{"name":""}]`, CodeNotTool},
		{"numeric name", `[{"name":7}]`, CodeNotTool},
		{"duplicate names", `[{"name":"a"},{"name":"b"},{"name":"a"}]`, CodeDuplicate},
		{"fraction in inputSchema", `[{"name":"a","inputSchema":{"multipleOf":0.01}}]`, CodeNumber},
		{"whole-valued fraction", `[{"name":"a","inputSchema":{"maximum":2340.0}}]`, CodeNumber},
		{"exponent in outputSchema", `[{"name":"a","outputSchema":{"maximum":1e3}}]`, CodeNumber},
		{"integer out of range", `[{"name":"a","inputSchema":{"maximum":9007199254740992}}]`, CodeNumber},
		{"duplicate member", `[{"name":"a","name":"b"}]`, "AWR-CANON-004"},
		{"lone surrogate", `[{"name":"\ud800"}]`, "AWR-CANON-003"},
		{"invalid UTF-8", "[{\"name\":\"\xff\"}]", "AWR-CANON-003"},
		{"syntax", `[{"name":"a"},]`, "AWR-CANON-005"},
		{"not a tool list", `{"foo":[]}`, CodeInput},
		{"tools not an array", `{"tools":{}}`, CodeInput},
		{"a string", `"tools"`, CodeInput},
		{"JSON-RPC error", `{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"Method not found"}}`, CodeInput},
		{"JSON-RPC without result", `{"jsonrpc":"2.0","id":1}`, CodeInput},
		{"paginated", `{"tools":[{"name":"a"}],"nextCursor":"p2"}`, CodeInput},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sri, err := DigestListResult([]byte(tt.in))
			if got := Code(err); got != tt.code {
				t.Fatalf("DigestListResult(%q) = %q, %v; want code %s", tt.in, sri, err, tt.code)
			}
			if !strings.HasPrefix(err.Error(), tt.code+": ") {
				t.Errorf("error %q does not start with its code", err)
			}
		})
	}
}

func TestNumberRefusalNamesTheTool(t *testing.T) {
	_, err := DigestListResult([]byte(`[{"name":"ok"},{"name":"bad","inputSchema":{"default":0.5}}]`))
	r, ok := err.(*Refusal)
	if !ok || r.Code != CodeNumber || r.Tool != "bad" || !strings.Contains(r.Reason, "AWR-CANON-001") {
		t.Fatalf("got %#v, want MTL-NUM-001 about tool \"bad\" citing AWR-CANON-001", err)
	}
}

// Numbers in members MTL/1 drops do not reach the digest, so they must not
// stop it: HISTOR parses leniently and refuses only what it canonicalizes.
func TestDroppedMembersDoNotMatter(t *testing.T) {
	plain, err := DigestListResult([]byte(`[{"name":"a","description":"d","inputSchema":{"type":"object"}}]`))
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range []string{
		`[{"name":"a","description":"d","inputSchema":{"type":"object"},"annotations":{"weight":0.5},"title":"T","_meta":{"n":1e9}}]`,
		`{"tools":[{"name":"a","description":"d","inputSchema":{"type":"object"}}],"_meta":{"x":1.5},"nextCursor":""}`,
		`{"jsonrpc":"2.0","id":7,"result":{"tools":[{"inputSchema":{"type":"object"},"description":"d","name":"a"}]}}`,
		"\n[ {\"name\" : \"a\" , \"description\" : \"\\u0064\", \"inputSchema\" : { \"type\" : \"object\" } } ]\n",
	} {
		got, err := DigestListResult([]byte(in))
		if err != nil || got != plain {
			t.Errorf("DigestListResult(%q) = %s, %v; want %s", in, got, err, plain)
		}
	}
}

func TestNormalize(t *testing.T) {
	tools, err := ToolSetFromListResult([]byte(`[
		{"name":"b","description":5,"inputSchema":"x","outputSchema":[],"title":"dropped"},
		{"name":"a","description":"d","inputSchema":{"type":"object"},"outputSchema":{}}
	]`))
	if err != nil {
		t.Fatal(err)
	}
	got, err := CanonicalToolSet(tools)
	if err != nil {
		t.Fatal(err)
	}
	want := `[{"description":"d","inputSchema":{"type":"object"},"name":"a","outputSchema":{}},{"description":"","inputSchema":{},"name":"b"}]`
	if string(got) != want {
		t.Errorf("CanonicalToolSet = %s\nwant %s", got, want)
	}
}

// An absent outputSchema and an empty one are different contracts and must
// give different digests; so must a description change of one byte.
func TestDigestSensitivity(t *testing.T) {
	inputs := []string{
		`[{"name":"a"}]`,
		`[{"name":"a","outputSchema":{}}]`,
		`[{"name":"a","description":"x"}]`,
		`[{"name":"a","description":"y"}]`,
		`[{"name":"a","inputSchema":{"type":"object"}}]`,
		`[{"name":"A"}]`,
	}
	seen := map[string]string{}
	for _, in := range inputs {
		sri, err := DigestListResult([]byte(in))
		if err != nil {
			t.Fatal(err)
		}
		if prev, dup := seen[sri]; dup {
			t.Errorf("%s and %s share digest %s", prev, in, sri)
		}
		seen[sri] = in
	}
}

func TestUTF16Order(t *testing.T) {
	// U+FFFF is one code unit 0xFFFF; U+1F600 is 0xD83D 0xDE00, so UTF-16
	// order puts the emoji first although its code point is larger.
	// Likewise the private-use U+E000 sorts after U+10000.
	tools, err := ToolSetFromListResult([]byte(`[{"name":"\uffff"},{"name":"\ud83d\ude00"},{"name":"\ue000"},{"name":"\ud800\udc00"},{"name":"z"}]`))
	if err != nil {
		t.Fatal(err)
	}
	entries, err := Normalize(tools)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"z", "\U00010000", "\U0001F600", "\ue000", "\uffff"}
	for i, e := range entries {
		if got := e.(map[string]any)["name"]; got != want[i] {
			t.Errorf("position %d = %q, want %q", i, got, want[i])
		}
	}
	// The order must also be independent of the order the server sent.
	a, _ := DigestListResult([]byte(`[{"name":"\uffff"},{"name":"\ud83d\ude00"}]`))
	b, _ := DigestListResult([]byte(`[{"name":"\ud83d\ude00"},{"name":"\uffff"}]`))
	if a != b || a == "" {
		t.Errorf("digest depends on retrieval order: %s vs %s", a, b)
	}
}

func TestBuildHazard(t *testing.T) {
	tools, err := ToolSetFromListResult([]byte(`[{"name":"b","inputSchema":{"minimum":0.5}},{"name":"a"}]`))
	if err != nil {
		t.Fatal(err)
	}
	d, hazard, err := Build(Server{Name: "n", Registry: "r"}, tools, Artifact{})
	if err != nil {
		t.Fatal(err)
	}
	if hazard == nil || hazard.Code != CodeNumber || hazard.Tool != "b" {
		t.Fatalf("hazard = %v, want MTL-NUM-001 on tool b", hazard)
	}
	got, err := d.JCS()
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"mtl":"1","server":{"name":"n","registry":"r"},"toolSet":{"count":2,"names":["a","b"]}}`; string(got) != want {
		t.Errorf("JCS = %s, want %s", got, want)
	}
	if _, _, err := Build(Server{Name: "n", Registry: "r"}, nil, Artifact{}); Code(err) != CodeEmpty {
		t.Errorf("Build of an empty set: %v, want %s", err, CodeEmpty)
	}
}

func TestDescriptorOmitsEmpty(t *testing.T) {
	d := Descriptor{
		Server:   Server{Name: "com.example/x", Registry: "urn:awr:mtl:1:registry:registry.modelcontextprotocol.io"},
		ToolSet:  ToolSet{Count: 1, Names: []string{"t"}, DigestSRI: "sha256-x"},
		Artifact: Artifact{Transport: "streamable-http", Endpoint: "https://x.example/mcp"},
	}
	got, err := d.JCS()
	if err != nil {
		t.Fatal(err)
	}
	want := `{"artifact":{"endpoint":"https://x.example/mcp","transport":"streamable-http"},"mtl":"1","server":{"name":"com.example/x","registry":"urn:awr:mtl:1:registry:registry.modelcontextprotocol.io"},"toolSet":{"count":1,"digestSRI":"sha256-x","names":["t"]}}`
	if string(got) != want {
		t.Errorf("JCS = %s\nwant %s", got, want)
	}
	// A version bump changes nothing when Version is left empty, and
	// everything when it is set: callers choose, HISTOR leaves it empty.
	withVersion := d
	withVersion.Server.Version = "2.0.0"
	a, _, _ := d.Subject()
	b, _, _ := withVersion.Subject()
	if a == b {
		t.Error("server.version set but the subject did not change")
	}
}

func TestDescriptorValidate(t *testing.T) {
	ok := Descriptor{Server: Server{Name: "n", Registry: "r"}, ToolSet: ToolSet{Count: 2, Names: []string{"a", "b"}}}
	if err := ok.Validate(); err != nil {
		t.Fatalf("valid descriptor refused: %v", err)
	}
	for name, mutate := range map[string]func(*Descriptor){
		"no name":         func(d *Descriptor) { d.Server.Name = "" },
		"no registry":     func(d *Descriptor) { d.Server.Registry = "" },
		"bad transport":   func(d *Descriptor) { d.Artifact.Transport = "websocket" },
		"count mismatch":  func(d *Descriptor) { d.ToolSet.Count = 3 },
		"unsorted names":  func(d *Descriptor) { d.ToolSet.Names = []string{"b", "a"} },
		"code point sort": func(d *Descriptor) { d.ToolSet.Names = []string{"\uffff", "\U0001F600"} },
	} {
		d := ok
		d.ToolSet.Names = slicesClone(ok.ToolSet.Names)
		mutate(&d)
		if _, err := d.JCS(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func slicesClone(s []string) []string { return append([]string(nil), s...) }

func TestServerID(t *testing.T) {
	// Expected values computed with sha256sum over the same bytes.
	if got := ServerID("com.example/weather", "https://weather.example.com/mcp"); got != "628a101a2f2bbfc2" {
		t.Errorf("ServerID = %s", got)
	}
	if got := ServerID("a", ""); got != "87428fc522803d31" {
		t.Errorf("ServerID(a, \"\") = %s", got)
	}
}

func TestRunDigest(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := RunDigest(bytes.NewReader(readVector(t, "pass-01-tools.json")), &out, &errOut); code != 0 {
		t.Fatalf("exit %d, stderr %q", code, errOut.String())
	}
	if out.String() != vectorToolsSRI+"\n" || errOut.Len() != 0 {
		t.Errorf("stdout %q stderr %q", out.String(), errOut.String())
	}
	for in, code := range map[string]string{`[]`: CodeEmpty, `[{"name":"a","inputSchema":{"x":1.5}}]`: CodeNumber, `{`: "AWR-CANON-005"} {
		out.Reset()
		errOut.Reset()
		if got := RunDigest(strings.NewReader(in), &out, &errOut); got != 1 {
			t.Errorf("%s: exit %d, want 1", in, got)
		}
		if out.Len() != 0 || !strings.HasPrefix(errOut.String(), code+": ") || strings.Count(errOut.String(), "\n") != 1 {
			t.Errorf("%s: stdout %q stderr %q, want one line starting %s", in, out.String(), errOut.String(), code)
		}
	}
}

type failingReader struct{}

func (failingReader) Read([]byte) (int, error) { return 0, errRead }

var errRead = errors.New("disk on fire")

func TestRunDigestReadError(t *testing.T) {
	var out, errOut bytes.Buffer
	if got := RunDigest(failingReader{}, &out, &errOut); got != 2 {
		t.Errorf("exit %d, want 2", got)
	}
}
