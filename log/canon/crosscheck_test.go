package canon

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/histor-observer/histor/log/canon/canontest"
)

// The cross-check compares our bytes with an independent RFC 8785
// implementation: the npm package canonicalize (JavaScript, whose string
// comparison and JSON.stringify are exactly RFC 8785's rules for the inputs
// AWR/2 allows).
const crossCheckScript = `
const canonicalize = require(process.argv[process.argv.length - 1]);
const inputs = JSON.parse(require("fs").readFileSync(0, "utf8"));
process.stdout.write(JSON.stringify(inputs.map(s => canonicalize(JSON.parse(s)))));
`

func TestCrossCheckNode(t *testing.T) {
	if testing.Short() {
		t.Skip("runs node and may install an npm package; skipped in -short mode")
	}
	mod := canontest.CanonicalizeModule(t)
	inputs := crossCheckInputs(2000)
	want := runNode(t, mod, inputs)
	if len(want) != len(inputs) {
		t.Fatalf("node returned %d results for %d inputs", len(want), len(inputs))
	}
	for i, in := range inputs {
		got, err := Canonicalize([]byte(in))
		if err != nil {
			t.Errorf("input %d %q: %v", i, in, err)
			continue
		}
		if !bytes.Equal(got, []byte(want[i])) {
			t.Errorf("input %d %q:\nours %q\nnode %q", i, in, got, want[i])
		}
	}
}

func runNode(t *testing.T, mod string, inputs []string) []string {
	in, err := json.Marshal(inputs)
	if err != nil {
		t.Fatal(err)
	}
	var res []string
	if err := json.Unmarshal(canontest.RunNode(t, crossCheckScript, mod, in), &res); err != nil {
		t.Fatalf("reading node's answer: %v", err)
	}
	return res
}

// crossCheckInputs builds documents whose member names and strings come from
// the places implementations disagree: astral planes, the private-use areas,
// the BMP just below and above the surrogates, every control character, and
// escapes; numbers span the whole ±(2^53−1) range.
func crossCheckInputs(n int) []string {
	rng := rand.New(rand.NewPCG(1, 2))
	out := []string{
		`{"\ud83d\ude00":1,"\ue000":2,"\uf8ff":3,"\udbc0\udc00":4,"\ud800\udc00":5,"\uffff":6,"\ufb33":7}`,
		`[9007199254740991,-9007199254740991,0,-0,1,-1,4294967296,-4294967296]`,
		`"\u0000\u0001\u0002\u0003\u0004\u0005\u0006\u0007\b\t\n\u000b\f\r\u000e\u000f\u0010\u0011\u0012\u0013\u0014\u0015\u0016\u0017\u0018\u0019\u001a\u001b\u001c\u001d\u001e\u001f\u007f\u0080\u2028\u2029\"\\\/"`,
	}
	for len(out) < n {
		out = append(out, randomDoc(rng, 3))
	}
	return out
}

func randomDoc(rng *rand.Rand, depth int) string {
	switch k := rng.IntN(10); {
	case depth > 0 && k < 3:
		return randomObject(rng, depth-1)
	case depth > 0 && k < 5:
		parts := make([]string, rng.IntN(5))
		for i := range parts {
			parts[i] = randomDoc(rng, depth-1)
		}
		return "[" + strings.Join(parts, ",") + "]"
	case k < 7:
		return randomString(rng)
	case k < 9:
		return randomInt(rng)
	default:
		return []string{"true", "false", "null"}[rng.IntN(3)]
	}
}

func randomObject(rng *rand.Rand, depth int) string {
	seen := map[string]bool{}
	var parts []string
	for range rng.IntN(8) {
		name := randomString(rng)
		var key string
		_ = json.Unmarshal([]byte(name), &key)
		if seen[key] {
			continue
		}
		seen[key] = true
		parts = append(parts, name+":"+randomDoc(rng, depth))
	}
	return "{" + strings.Join(parts, ",") + "}"
}

func randomInt(rng *rand.Rand) string {
	switch rng.IntN(3) {
	case 0:
		return fmt.Sprint(rng.Int64N(2*MaxSafeInteger+1) - MaxSafeInteger)
	case 1:
		return fmt.Sprint(rng.Int64N(2001) - 1000)
	default:
		return fmt.Sprint([]int64{MaxSafeInteger, -MaxSafeInteger, MaxSafeInteger - 1, 1 << 52, -(1 << 52), 1 << 31, 1 << 32}[rng.IntN(7)])
	}
}

// randomString writes a JSON string literal mixing raw characters and
// escapes of them.
func randomString(rng *rand.Rand) string {
	var sb strings.Builder
	sb.WriteByte('"')
	for range rng.IntN(6) {
		r := randomRune(rng)
		switch {
		case r < 0x20 || r == '"' || r == '\\' || rng.IntN(3) == 0:
			writeEscaped(&sb, r)
		default:
			sb.WriteRune(r)
		}
	}
	sb.WriteByte('"')
	return sb.String()
}

func writeEscaped(sb *strings.Builder, r rune) {
	if r >= 0x10000 {
		r -= 0x10000
		fmt.Fprintf(sb, `\u%04x\u%04X`, 0xD800+(r>>10), 0xDC00+(r&0x3FF))
		return
	}
	fmt.Fprintf(sb, `\u%04X`, r)
}

var runeRanges = [][2]rune{
	{0x00, 0x1f}, {0x20, 0x7f}, {0x80, 0xff}, {0xd700, 0xd7ff}, {0xe000, 0xe0ff}, {0xf800, 0xf8ff},
	{0xfb00, 0xffff}, {0x10000, 0x100ff}, {0x1f600, 0x1f64f}, {0xf0000, 0xf00ff}, {0x100000, 0x1000ff}, {0x10ff00, 0x10ffff},
}

func randomRune(rng *rand.Rand) rune {
	rr := runeRanges[rng.IntN(len(runeRanges))]
	return rr[0] + rng.Int32N(rr[1]-rr[0]+1)
}
