package format_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/histor-observer/histor/log/format"
)

// Every parser has a fuzz target; `go test` runs the seeds. Each target checks more than
// "no panic": what a parser accepts must re-encode to the bytes it was given (one spelling
// per value) or survive a round trip.

func FuzzParseSTH(f *testing.F) {
	sth, _ := testHead(f)
	f.Add(sth)
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"type":"histor.sth/v1"}`))
	f.Fuzz(func(t *testing.T, doc []byte) {
		s, err := format.ParseSTH(doc)
		if err != nil {
			return
		}
		// Whatever parses re-signs to a head that parses to the same values.
		again, err := format.SignSTH(testKey(), s.Log, s.TreeSize, s.Root, s.Time)
		if err != nil {
			t.Fatalf("re-signing a parsed head: %v", err)
		}
		s2, err := format.VerifySTH(again, testPub())
		if err != nil || s2.TreeSize != s.TreeSize || s2.Root != s.Root || !s2.Time.Equal(s.Time) || s2.Log != s.Log {
			t.Fatalf("round trip: %v", err)
		}
	})
}

func FuzzParseCheckpoint(f *testing.F) {
	_, cp := testHead(f)
	f.Add(cp)
	f.Add([]byte("histor.test/log\n0\n47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=\n\n— histor.test/log AAAA\n"))
	v := testVerifier(f)
	f.Fuzz(func(t *testing.T, msg []byte) {
		c, err := format.ParseCheckpoint(msg, v)
		if err != nil {
			return
		}
		// Only our key signs; an accepted note must be our text exactly.
		if !bytes.HasPrefix(msg, []byte(c.Text()+"\n")) {
			t.Fatalf("accepted %q as %+v", msg, c)
		}
	})
}

func FuzzParseCheckpointText(f *testing.F) {
	f.Add("histor.test/log\n0\n47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=\n")
	f.Add("a\n18446744073709551615\nAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n")
	f.Add("a\n01\nAAAA\nx\n")
	f.Fuzz(func(t *testing.T, text string) {
		c, err := format.ParseCheckpointText(text)
		if err == nil && c.Text() != text {
			t.Fatalf("accepted %q, which re-encodes as %q", text, c.Text())
		}
	})
}

func FuzzParseCosignatures(f *testing.F) {
	c := testCheckpoint(f)
	s, err := format.SignCosignature(witnessName, witnessKey(), c, 1_790_000_000)
	if err != nil {
		f.Fatal(err)
	}
	f.Add([]byte(s.Line() + "\n"))
	f.Add([]byte(s.Line() + "\n" + s.Line() + "\n"))
	f.Add([]byte("— witness.example.com/w1 jWbPPwAAAABkGFDLEZMHwSRaJNiIDoe9DYn/zXcrtPHeolMI5OWXEhZCB9dlrDJsX3b2oyin1nPZqhf5nNo0xUe+mbIUBkBIfZ+qnA==\n"))
	f.Add([]byte("— x AAAA\n"))
	w := testCosigner(f)
	f.Fuzz(func(t *testing.T, body []byte) {
		sigs, err := format.ParseCosignatures(body)
		if err != nil {
			return
		}
		var again strings.Builder
		for _, s := range sigs {
			again.WriteString(s.Line() + "\n")
			if w.Matches(s) && s.Time != 1_790_000_000 && w.Verify(c, s) == nil {
				t.Fatalf("a cosignature nobody made verified: %+v", s)
			}
		}
		if again.String() != string(body) {
			t.Fatalf("accepted %q, which re-encodes as %q", body, again.String())
		}
	})
}

func FuzzParseCosignerKey(f *testing.F) {
	f.Add("witness.test/w1+63686739+BOpKbGPinFIKvvVQexMuxfmVR3auvr57kkIe6mkURtIs")
	f.Add("a+00000000+BA==")
	f.Fuzz(func(t *testing.T, vkey string) {
		w, err := format.ParseCosignerKey(vkey)
		if err != nil {
			return
		}
		if !strings.HasPrefix(vkey, w.Name+"+") || len(w.Key) != 32 {
			t.Fatalf("accepted %q as %+v", vkey, w)
		}
	})
}

func FuzzParseHexHashes(f *testing.F) {
	f.Add(strings.Repeat("0a", 32), strings.Repeat("ff", 32))
	f.Add("", "x")
	f.Fuzz(func(t *testing.T, a, b string) {
		h, err := format.ParseHexHashes([]string{a, b})
		if err == nil && (len(h) != 2 || a != strings.ToLower(a) || len(a) != 64) {
			t.Fatalf("accepted %q, %q", a, b)
		}
	})
}

func FuzzSplitBundle(f *testing.F) {
	f.Add(format.AppendBundleEntry(format.AppendBundleEntry(nil, []byte("a")), []byte("bc")), 2)
	f.Add([]byte{0, 0}, 1)
	f.Add([]byte{0, 5, 'a'}, 1)
	f.Fuzz(func(t *testing.T, b []byte, want int) {
		entries, err := format.SplitBundle(b, want)
		if err != nil {
			return
		}
		var again []byte
		for _, e := range entries {
			again = format.AppendBundleEntry(again, e)
		}
		if !bytes.Equal(again, b) || len(entries) != want {
			t.Fatalf("accepted %x as %d entries that re-encode as %x", b, len(entries), again)
		}
	})
}

func FuzzParseHashTile(f *testing.F) {
	f.Add(make([]byte, 64), 2)
	f.Add(make([]byte, 8192), 256)
	f.Add([]byte{1}, 1)
	f.Fuzz(func(t *testing.T, data []byte, width int) {
		h, err := format.ParseHashTile(data, width)
		if err != nil {
			return
		}
		var again []byte
		for _, x := range h {
			again = append(again, x[:]...)
		}
		if !bytes.Equal(again, data) {
			t.Fatalf("accepted %x as %d hashes", data, len(h))
		}
	})
}
