package audit_test

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"golang.org/x/mod/sumdb/note"

	hlog "github.com/histor-observer/histor/log"
	"github.com/histor-observer/histor/log/awr"
	"github.com/histor-observer/histor/log/keys"
	"github.com/histor-observer/histor/node/audit"
)

// TestTilesOfAHugeClaimedTree: a log that signs a head and a checkpoint claiming an enormous
// tree must leave the auditor with an incomplete audit when the tiles run out, not crash it by
// making it reserve memory for the whole claimed tree up front.
func TestTilesOfAHugeClaimedTree(t *testing.T) {
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	pub := key.Public().(ed25519.PublicKey)
	did, origin := awr.DIDKey(pub), "huge.test/log"
	const size = 1<<53 - 1 // the largest treeSize a histor.sth/v1 head can carry
	var root [32]byte
	rand.Read(root[:])
	body := fmt.Sprintf(`{"log":%q,"rootHash":%q,"timestamp":"2026-09-23T09:13:04Z","treeSize":%d,"type":%q}`,
		did, hex.EncodeToString(root[:]), uint64(size), hlog.STHType)
	sig := base64.RawURLEncoding.EncodeToString(ed25519.Sign(key, []byte(body)))
	sth := fmt.Sprintf(`%s,"signature":{"alg":"Ed25519","value":%q,"verificationMethod":%q}}`,
		body[:len(body)-1], sig, awr.VerificationMethod(did))
	signer, err := keys.NoteSigner(origin, key)
	if err != nil {
		t.Fatal(err)
	}
	cp, err := note.Sign(&note.Note{Text: fmt.Sprintf("%s\n%d\n%s\n", origin, uint64(size), base64.StdEncoding.EncodeToString(root[:]))}, signer)
	if err != nil {
		t.Fatal(err)
	}
	vkey, err := keys.NoteVerifierKey(origin, pub)
	if err != nil {
		t.Fatal(err)
	}
	issuer, _ := json.Marshal(map[string]string{"did": did, "logOrigin": origin, "logVkey": vkey})
	base := httptestServer(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/api/v1/issuer":
			w.Write(issuer)
		case "/api/v1/log/sth":
			w.Write([]byte(sth))
		case "/log/checkpoint":
			w.Write(cp)
		default:
			http.NotFound(w, r)
		}
	})
	defer func() {
		if p := recover(); p != nil {
			t.Fatalf("the auditor panicked on a log claiming %d entries: %v", uint64(size), p)
		}
	}()
	mustBeIncomplete(t, base, "", audit.Options{Tiles: true})
}
