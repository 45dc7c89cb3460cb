package mtl

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/histor-observer/histor/log/canon/canontest"
)

// mtlScript is MTL/1 §5 written again in JavaScript from the profile's text,
// over the npm canonicalize package: JSON.parse (lenient, like HISTOR's
// Python), normalise, sort with JavaScript's string order (UTF-16 code
// units), RFC 8785, SHA-256.
const mtlScript = `
const canonicalize = require(process.argv[process.argv.length - 1]);
const crypto = require("crypto");
const isObj = v => v !== null && typeof v === "object" && !Array.isArray(v);
const inputs = JSON.parse(require("fs").readFileSync(0, "utf8"));
process.stdout.write(JSON.stringify(inputs.map(s => {
  let v = JSON.parse(s);
  if (isObj(v) && "jsonrpc" in v) v = v.result;
  const tools = Array.isArray(v) ? v : v.tools;
  const entries = tools.map(t => {
    const e = { name: t.name,
      description: typeof t.description === "string" ? t.description : "",
      inputSchema: isObj(t.inputSchema) ? t.inputSchema : {} };
    if (isObj(t.outputSchema)) e.outputSchema = t.outputSchema;
    return e;
  });
  entries.sort((a, b) => a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
  return "sha256-" + crypto.createHash("sha256").update(canonicalize(entries), "utf8").digest("base64");
})));
`

func TestCrossCheckNode(t *testing.T) {
	if testing.Short() {
		t.Skip("runs node and may install an npm package; skipped in -short mode")
	}
	mod := canontest.CanonicalizeModule(t)
	rng := rand.New(rand.NewPCG(3, 4))
	inputs := make([]string, 1000)
	for i := range inputs {
		inputs[i] = randomListResult(rng)
	}
	stdin, err := json.Marshal(inputs)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	if err := json.Unmarshal(canontest.RunNode(t, mtlScript, mod, stdin), &want); err != nil {
		t.Fatalf("reading node's answer: %v", err)
	}
	for i, in := range inputs {
		got, err := DigestListResult([]byte(in))
		if err != nil || got != want[i] {
			t.Errorf("input %d %s:\nours %s %v\nnode %s", i, in, got, err, want[i])
		}
	}
}

// randomListResult makes a digestible tools/list result in one of the three
// accepted shapes. Names come from where orderings differ; refused numbers
// appear only in members MTL/1 drops.
func randomListResult(rng *rand.Rand) string {
	seen := map[string]bool{}
	var tools []string
	for len(tools) == 0 || rng.IntN(3) > 0 && len(tools) < 6 {
		name := randomName(rng)
		if seen[name] {
			continue
		}
		seen[name] = true
		tools = append(tools, randomTool(rng, name))
	}
	arr := "[" + strings.Join(tools, ",") + "]"
	switch rng.IntN(3) {
	case 0:
		return arr
	case 1:
		return `{"tools":` + arr + `,"_meta":{"w":0.5}}`
	default:
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":{"tools":%s}}`, rng.IntN(100), arr)
	}
}

func randomTool(rng *rand.Rand, name string) string {
	nameJSON, _ := json.Marshal(name)
	members := []string{`"name":` + string(nameJSON)}
	pick := func(opts ...string) string { return opts[rng.IntN(len(opts))] }
	if d := pick("", `"description":"Return \u00e9 \ud83d\ude00 \u0001"`, `"description":5`, `"description":null`, `"description":{"x":1}`); d != "" {
		members = append(members, d)
	}
	if s := pick("", `"inputSchema":{"type":"object","properties":{"n":{"type":"integer","maximum":9007199254740991}}}`, `"inputSchema":[]`, `"inputSchema":"x"`, `"inputSchema":{}`); s != "" {
		members = append(members, s)
	}
	if s := pick("", `"outputSchema":{}`, `"outputSchema":{"\ue000":-9007199254740991,"\ud800\udc00":true}`, `"outputSchema":null`, `"outputSchema":[1]`); s != "" {
		members = append(members, s)
	}
	if s := pick("", `"annotations":{"weight":0.25,"big":1e400}`, `"title":"T"`); s != "" {
		members = append(members, s)
	}
	rng.Shuffle(len(members), func(i, j int) { members[i], members[j] = members[j], members[i] })
	return "{" + strings.Join(members, ",") + "}"
}

var nameRunes = [][2]rune{{'a', 'z'}, {0x20, 0x7e}, {0xe000, 0xe0ff}, {0xf8f0, 0xf8ff}, {0xfff0, 0xffff}, {0x10000, 0x10010}, {0x1f600, 0x1f64f}, {0x100000, 0x100010}, {0x1, 0x1f}}

func randomName(rng *rand.Rand) string {
	var sb strings.Builder
	for range 1 + rng.IntN(3) {
		r := nameRunes[rng.IntN(len(nameRunes))]
		sb.WriteRune(r[0] + rng.Int32N(r[1]-r[0]+1))
	}
	return sb.String()
}
