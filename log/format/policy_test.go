package format_test

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/note"

	"github.com/histor-observer/histor/log/format"
	"github.com/histor-observer/histor/log/keys"
)

// policyWitness is a witness of the policy tests: key i, key name "w<i>.test/w".
type policyWitness struct {
	name string
	priv ed25519.PrivateKey
}

func newPolicyWitness(i int) policyWitness {
	seed := bytes.Repeat([]byte{byte(100 + i)}, 32)
	return policyWitness{name: fmt.Sprintf("w%d.test/w", i), priv: ed25519.NewKeyFromSeed(seed)}
}

func (w policyWitness) pub() ed25519.PublicKey { return w.priv.Public().(ed25519.PublicKey) }

func (w policyWitness) vkey(t testing.TB) string {
	t.Helper()
	v, err := keys.CosignatureVerifierKey(w.name, w.pub())
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func (w policyWitness) cosign(t testing.TB, c format.Checkpoint) format.Cosignature {
	t.Helper()
	s, err := format.SignCosignature(w.name, w.priv, c, 1700000000)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func logVKey(t testing.TB) string {
	t.Helper()
	v, err := keys.NoteVerifierKey(testOrigin, testPub())
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// specPolicy is the example of c2sp.org/tlog-policy, with keys filled in:
// witnesses X1..X3 are keys 1..3, Y1..Y3 keys 4..6.
func specPolicy(t testing.TB) string {
	t.Helper()
	r := strings.NewReplacer("<log>", logVKey(t),
		"<X1>", newPolicyWitness(1).vkey(t), "<X2>", newPolicyWitness(2).vkey(t), "<X3>", newPolicyWitness(3).vkey(t),
		"<Y1>", newPolicyWitness(4).vkey(t), "<Y2>", newPolicyWitness(5).vkey(t), "<Y3>", newPolicyWitness(6).vkey(t))
	return r.Replace(`log <log>

witness X1 <X1>
witness X2 <X2>
witness X3 <X3>
group X-witnesses 2 X1 X2 X3

witness Y1 <Y1>
witness Y2 <Y2>
witness Y3 <Y3>
group Y-witnesses any Y1 Y2 Y3

group X-and-Y all X-witnesses Y-witnesses
quorum X-and-Y
`)
}

func mustParsePolicy(t testing.TB, text string) *format.Policy {
	t.Helper()
	p, err := format.ParsePolicy([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestPolicySpecExample: two of the X witnesses and one of the Y witnesses, no less.
func TestPolicySpecExample(t *testing.T) {
	p := mustParsePolicy(t, specPolicy(t))
	if len(p.Logs) != 1 || p.Logs[0].Origin != testOrigin || len(p.Witnesses) != 6 {
		t.Fatalf("parsed %d logs (%+v), %d witnesses", len(p.Logs), p.Logs, len(p.Witnesses))
	}
	c := testCheckpoint(t)
	for _, tc := range []struct {
		keys []int
		met  bool
	}{
		{nil, false},
		{[]int{1, 2, 4}, true},
		{[]int{2, 3, 6}, true},
		{[]int{1, 2, 3, 4, 5, 6}, true},
		{[]int{1, 4}, false},
		{[]int{1, 2, 3}, false},
		{[]int{4, 5, 6}, false},
		{[]int{1, 4, 5, 6}, false},
	} {
		var sigs []format.Cosignature
		var want []string
		for _, k := range tc.keys {
			sigs = append(sigs, newPolicyWitness(k).cosign(t, c))
			want = append(want, [...]string{"X1", "X2", "X3", "Y1", "Y2", "Y3"}[k-1])
		}
		got, met := p.Check(c, sigs)
		if met != tc.met || !slices.Equal(got, want) {
			t.Errorf("keys %v: cosigned %v, met %v; want %v, %v", tc.keys, got, met, want, tc.met)
		}
	}
}

func TestParsePolicyRefuses(t *testing.T) {
	w1, w2 := newPolicyWitness(1).vkey(t), newPolicyWitness(2).vkey(t)
	lg := logVKey(t)
	badID := strings.Replace(w1, "+", "+X", 1)
	logAsWitness, _ := keys.NoteVerifierKey("w1.test/w", newPolicyWitness(1).pub())
	sameKeyOtherName, _ := keys.CosignatureVerifierKey("other.test/w", newPolicyWitness(1).pub())
	for _, tc := range []struct{ name, text string }{
		{"empty", ""},
		{"only comments", "# nothing\n\n"},
		{"no final newline", "quorum none"},
		{"carriage return", "quorum none\r\n"},
		{"NUL", "quorum none\n\x00\n"},
		{"DEL", "# \x7f\nquorum none\n"},
		{"unknown directive", "quorum none\nwitnesses a " + w1 + "\n"},
		{"directive case", "QUORUM none\n"},
		{"two quorums", "quorum none\nquorum none\n"},
		{"quorum without name", "quorum\n"},
		{"quorum two names", "witness a " + w1 + "\nquorum a a\n"},
		{"quorum undefined", "quorum a\n"},
		{"quorum before its witness", "quorum a\nwitness a " + w1 + "\n"},
		{"log without key", "log\nquorum none\n"},
		{"log extra field", "log " + lg + " https://log.test/ x\nquorum none\n"},
		{"log cosignature key", "log " + w1 + "\nquorum none\n"},
		{"log key twice", "log " + lg + "\nlog " + lg + "\nquorum none\n"},
		{"log bad URL", "log " + lg + " log.test/\nquorum none\n"},
		{"log ftp URL", "log " + lg + " ftp://log.test/\nquorum none\n"},
		{"log key bad id", "log " + strings.Replace(lg, "+", "+0", 1) + "\nquorum none\n"},
		{"witness without key", "witness a\nquorum none\n"},
		{"witness extra field", "witness a " + w1 + " https://w.test/ x\nquorum none\n"},
		{"witness log key", "witness a " + logAsWitness + "\nquorum none\n"},
		{"witness key ID not hex", "witness a " + badID + "\nquorum none\n"},
		{"witness named none", "witness none " + w1 + "\nquorum none\n"},
		{"witness name twice", "witness a " + w1 + "\nwitness a " + w2 + "\nquorum a\n"},
		{"witness key twice", "witness a " + w1 + "\nwitness b " + sameKeyOtherName + "\nquorum a\n"},
		{"witness bad URL", "witness a " + w1 + " :\nquorum a\n"},
		{"group no members", "witness a " + w1 + "\ngroup g any\nquorum g\n"},
		{"group no threshold", "witness a " + w1 + "\ngroup g\nquorum g\n"},
		{"group forward member", "group g any a\nwitness a " + w1 + "\nquorum g\n"},
		{"group member twice", "witness a " + w1 + "\ngroup g any a a\nquorum g\n"},
		{"group member none", "witness a " + w1 + "\ngroup g any a none\nquorum g\n"},
		{"group itself", "witness a " + w1 + "\ngroup g any a g\nquorum g\n"},
		{"group k 0", "witness a " + w1 + "\ngroup g 0 a\nquorum g\n"},
		{"group k > n", "witness a " + w1 + "\ngroup g 2 a\nquorum g\n"},
		{"group k leading zero", "witness a " + w1 + "\nwitness b " + w2 + "\ngroup g 02 a b\nquorum g\n"},
		{"group k plus", "witness a " + w1 + "\ngroup g +1 a\nquorum g\n"},
		{"group k hex", "witness a " + w1 + "\ngroup g 0x1 a\nquorum g\n"},
		{"group ALL", "witness a " + w1 + "\ngroup g ALL a\nquorum g\n"},
		{"group named like a witness", "witness a " + w1 + "\ngroup a any a\nquorum a\n"},
		{"group named none", "witness a " + w1 + "\ngroup none any a\nquorum none\n"},
		{"too long", strings.Repeat("#\n", format.MaxPolicyBytes/2+1) + "quorum none\n"},
	} {
		if p, err := format.ParsePolicy([]byte(tc.text)); err == nil {
			t.Errorf("%s: accepted %q as %+v", tc.name, tc.text, p)
		}
	}
}

func TestParsePolicyAccepts(t *testing.T) {
	w1, w2 := newPolicyWitness(1).vkey(t), newPolicyWitness(2).vkey(t)
	for _, tc := range []struct {
		name, text string
		witnesses  int
	}{
		{"quorum none alone", "quorum none\n", 0},
		{"comments and blanks", "# a policy\n\n  \t\n\t# indented comment\nquorum none\n", 0},
		{"tabs and trailing space", "\twitness\ta\t" + w1 + "  \n quorum\ta \t\n", 1},
		{"URLs", "log " + logVKey(t) + " https://log.test/\nwitness a " + w1 + " http://127.0.0.1:7380/w\nquorum a\n", 1},
		{"witnesses after the quorum", "witness a " + w1 + "\nquorum a\nwitness b " + w2 + "\n", 2},
		{"opaque names", "witness K " + w1 + "\nwitness \xe2\x84\xaa " + w2 + "\ngroup g all K \xe2\x84\xaa\nquorum g\n", 2},
		{"numeric names", "witness 1 " + w1 + "\nwitness 2 " + w2 + "\ngroup 3 1 1 2\nquorum 3\n", 2},
		{"nested groups", "witness a " + w1 + "\nwitness b " + w2 + "\ngroup g any a\ngroup h all g b\nquorum h\n", 2},
	} {
		p, err := format.ParsePolicy([]byte(tc.text))
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if len(p.Witnesses) != tc.witnesses {
			t.Errorf("%s: %d witnesses, want %d", tc.name, len(p.Witnesses), tc.witnesses)
		}
	}
}

// TestPolicyBounds: the spec's 32 of each parse; one past each of ours does not.
func TestPolicyBounds(t *testing.T) {
	build := func(logs, witnesses, groups int) string {
		var b strings.Builder
		for i := range logs {
			k := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{byte(i), byte(i >> 8), 1}, 11)[:32])
			v, _ := keys.NoteVerifierKey(fmt.Sprintf("log%d.test", i), k.Public().(ed25519.PublicKey))
			fmt.Fprintf(&b, "log %s\n", v)
		}
		for i := range witnesses {
			k := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{byte(i), byte(i >> 8), 2}, 11)[:32])
			v, _ := keys.CosignatureVerifierKey(fmt.Sprintf("w%d.test", i), k.Public().(ed25519.PublicKey))
			fmt.Fprintf(&b, "witness w%d %s\n", i, v)
		}
		for i := range groups {
			fmt.Fprintf(&b, "group g%d any w0\n", i)
		}
		b.WriteString("quorum none\n")
		return b.String()
	}
	for _, tc := range []struct {
		logs, witnesses, groups int
		ok                      bool
	}{
		{32, 32, 32, true},
		{format.MaxPolicyLogs, format.MaxPolicyWitnesses, format.MaxPolicyGroups, true},
		{format.MaxPolicyLogs + 1, 1, 0, false},
		{0, format.MaxPolicyWitnesses + 1, 0, false},
		{0, 1, format.MaxPolicyGroups + 1, false},
	} {
		p, err := format.ParsePolicy([]byte(build(tc.logs, tc.witnesses, tc.groups)))
		if (err == nil) != tc.ok {
			t.Errorf("%d logs, %d witnesses, %d groups: err %v, want ok %v", tc.logs, tc.witnesses, tc.groups, err, tc.ok)
		}
		if err == nil && (len(p.Logs) != tc.logs || len(p.Witnesses) != tc.witnesses) {
			t.Errorf("parsed %d logs, %d witnesses", len(p.Logs), len(p.Witnesses))
		}
	}
}

// TestPolicyCheckCountsOnlyValidLines: a line counts only if it is a listed key's valid
// signature over this checkpoint.
func TestPolicyCheckCountsOnlyValidLines(t *testing.T) {
	w1, w2 := newPolicyWitness(1), newPolicyWitness(2)
	p := mustParsePolicy(t, "witness a "+w1.vkey(t)+"\nwitness b "+w2.vkey(t)+"\ngroup g all a b\nquorum g\n")
	c := testCheckpoint(t)
	other := c
	other.Size++
	mangled := w2.cosign(t, c)
	mangled.Signature = bytes.Clone(mangled.Signature)
	mangled.Signature[5] ^= 1
	retimed := w2.cosign(t, c)
	retimed.Time++
	impostor := policyWitness{name: w2.name, priv: newPolicyWitness(9).priv}.cosign(t, c)
	for _, tc := range []struct {
		name string
		sigs []format.Cosignature
		want []string
	}{
		{"both", []format.Cosignature{w1.cosign(t, c), w2.cosign(t, c)}, []string{"a", "b"}},
		{"one twice", []format.Cosignature{w1.cosign(t, c), w1.cosign(t, c)}, []string{"a"}},
		{"unlisted key", []format.Cosignature{w1.cosign(t, c), newPolicyWitness(3).cosign(t, c)}, []string{"a"}},
		{"other checkpoint", []format.Cosignature{w1.cosign(t, c), w2.cosign(t, other)}, []string{"a"}},
		{"bit flip", []format.Cosignature{w1.cosign(t, c), mangled}, []string{"a"}},
		{"time changed", []format.Cosignature{w1.cosign(t, c), retimed}, []string{"a"}},
		{"same name other key", []format.Cosignature{w1.cosign(t, c), impostor}, []string{"a"}},
		{"bad then good", []format.Cosignature{mangled, w1.cosign(t, c), w2.cosign(t, c)}, []string{"a", "b"}},
	} {
		got, met := p.Check(c, tc.sigs)
		if !slices.Equal(got, tc.want) || met != (len(tc.want) == 2) {
			t.Errorf("%s: cosigned %v, met %v; want %v", tc.name, got, met, tc.want)
		}
	}
}

// TestPolicyVerify checks whole notes: the log's signature first, then the quorum.
func TestPolicyVerify(t *testing.T) {
	w1, w2 := newPolicyWitness(1), newPolicyWitness(2)
	policy := "log " + logVKey(t) + "\nwitness a " + w1.vkey(t) + "\nwitness b " + w2.vkey(t) + "\ngroup g any a b\nquorum g\n"
	p := mustParsePolicy(t, policy)
	_, cp := testHead(t)
	c := testCheckpoint(t)
	cosigned := append(bytes.Clone(cp), (w2.cosign(t, c).Line() + "\n")...)

	got, names, err := p.Verify(cosigned)
	if err != nil || got != c || !slices.Equal(names, []string{"b"}) {
		t.Fatalf("Verify(cosigned) = %+v, %v, %v", got, names, err)
	}
	if _, _, err := p.Verify(cp); !errors.Is(err, format.ErrNoQuorum) {
		t.Errorf("Verify(no cosignatures) = %v, want ErrNoQuorum", err)
	}
	if _, _, err := mustParsePolicy(t, "quorum none\n").Verify(cp); err == nil {
		t.Error("a policy without logs accepted a checkpoint")
	}
	otherLog := mustParsePolicy(t, strings.Replace(policy, logVKey(t), newPolicyLogKey(t), 1))
	if _, _, err := otherLog.Verify(cosigned); err == nil {
		t.Error("a checkpoint verified under another key of its origin")
	}
	bad := bytes.Replace(cosigned, []byte("\n2\n"), []byte("\n3\n"), 1)
	if _, _, err := p.Verify(bad); !errors.Is(err, format.ErrSignature) {
		t.Errorf("Verify(altered size) = %v, want ErrSignature", err)
	}
	if _, _, err := mustParsePolicy(t, "log "+logVKey(t)+"\nquorum none\n").Verify(cp); err != nil {
		t.Errorf("quorum none: %v", err)
	}
}

// newPolicyLogKey is another Ed25519 key under the test log's origin.
func newPolicyLogKey(t testing.TB) string {
	t.Helper()
	v, err := keys.NoteVerifierKey(testOrigin, newPolicyWitness(8).pub())
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestPolicyVerifyRotatedLogKey: one origin listed under two keys accepts either.
func TestPolicyVerifyRotatedLogKey(t *testing.T) {
	p := mustParsePolicy(t, "log "+newPolicyLogKey(t)+"\nlog "+logVKey(t)+"\nquorum none\n")
	_, cp := testHead(t)
	if _, _, err := p.Verify(cp); err != nil {
		t.Fatal(err)
	}
	s, err := keys.NoteSigner(testOrigin, newPolicyWitness(8).priv)
	if err != nil {
		t.Fatal(err)
	}
	cp2, err := note.Sign(&note.Note{Text: testCheckpoint(t).Text()}, s)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := p.Verify(cp2); err != nil {
		t.Fatal(err)
	}
}

func FuzzParsePolicy(f *testing.F) {
	f.Add([]byte(specPolicy(f)))
	f.Add([]byte("quorum none\n"))
	f.Add([]byte("witness a " + newPolicyWitness(1).vkey(f) + "\ngroup g 1 a\nquorum g\n"))
	known := map[string]policyWitness{}
	for i := 1; i <= 6; i++ {
		w := newPolicyWitness(i)
		known[string(w.pub())] = w
	}
	c := testCheckpoint(f)
	f.Fuzz(func(t *testing.T, text []byte) {
		p, err := format.ParsePolicy(text)
		if err != nil {
			return
		}
		if bytes.ContainsAny(text, "\r\x00") || !bytes.HasSuffix(text, []byte("\n")) {
			t.Fatalf("accepted %q", text)
		}
		// No cosignature meets any quorum but none: every group needs k >= 1.
		_, met := p.Check(c, nil)
		if met != (p.Quorum == "none") {
			t.Fatalf("no cosignatures: met %v for %q", met, text)
		}
		// Every witness cosigning meets every quorum: k <= n everywhere.
		var all []format.Cosignature
		for _, w := range p.Witnesses {
			kw, ok := known[string(w.Cosigner.Key)]
			if !ok {
				return
			}
			s, err := format.SignCosignature(w.Cosigner.Name, kw.priv, c, 1)
			if err != nil {
				t.Fatal(err)
			}
			all = append(all, s)
		}
		if names, met := p.Check(c, all); !met || len(names) != len(p.Witnesses) {
			t.Fatalf("all witnesses cosigning: %v, met %v for %q", names, met, text)
		}
	})
}
