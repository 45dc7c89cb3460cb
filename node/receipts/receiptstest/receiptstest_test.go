package receiptstest

import (
	"crypto/ed25519"
	"encoding/base64"
	"fmt"
	"strings"
	"testing"

	"github.com/histor-observer/histor/internal/tbfail"
)

func verifyFails(t *testing.T, doc, did string) string {
	return tbfail.Message(t, func(tb testing.TB) { VerifySTH(tb, []byte(doc), did) })
}

// TestVerifySTH: a head signed over its members verifies and is read back; a head with a
// member changed after signing, or by another log, or of another type, does not.
func TestVerifySTH(t *testing.T) {
	key := Key("log")
	did := DID(key)
	signed := fmt.Sprintf(`{"log":"%s","rootHash":"r00t","timestamp":"2026-09-23T09:13:04Z","treeSize":3,"type":"histor.receipts-sth/v1"}`, did)
	sig := base64.RawURLEncoding.EncodeToString(ed25519.Sign(key, []byte(signed)))
	doc := strings.TrimSuffix(signed, "}") + `,"signature":{"alg":"EdDSA","value":"` + sig + `"}}`
	if msg := verifyFails(t, doc, did); msg != "" {
		t.Fatalf("a signed head failed: %s", msg)
	}
	if s := VerifySTH(t, []byte(doc), did); s.TreeSize != 3 || s.RootHash != "r00t" {
		t.Errorf("read back %+v", s)
	}
	for name, tc := range map[string]struct{ doc, did, msg string }{
		"size changed":  {strings.Replace(doc, `"treeSize":3`, `"treeSize":4`, 1), did, "does not verify"},
		"another log":   {doc, DID(Key("other")), "want histor.receipts-sth/v1 by"},
		"another type":  {strings.Replace(doc, "receipts-sth", "log-sth", 1), did, "want histor.receipts-sth/v1 by"},
		"not JSON":      {"{", did, "head {"},
		"signature cut": {strings.Replace(doc, sig, sig[:20], 1), did, "does not verify"},
	} {
		if msg := verifyFails(t, tc.doc, tc.did); !strings.Contains(msg, tc.msg) {
			t.Errorf("%s: failed with %q, want %q", name, msg, tc.msg)
		}
	}
	if Digest(1) == Digest(2) || !strings.HasPrefix(Digest(1), "sha256-") {
		t.Errorf("digests %s %s", Digest(1), Digest(2))
	}
}
