package audit_test

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"filippo.io/torchwood"
	"golang.org/x/mod/sumdb/note"

	"github.com/histor-observer/histor/log/awr"
	"github.com/histor-observer/histor/log/format"
	"github.com/histor-observer/histor/log/keys"
	"github.com/histor-observer/histor/node/audit"
)

// TestTilesOfAHugeClaimedTree: a log that signs a head and a checkpoint claiming an enormous
// tree must leave the auditor with an incomplete audit when the tiles run out, not crash it by
// making it reserve memory for the whole claimed tree up front (the bound on leaves is lifted
// here so the tiles are read).
func TestTilesOfAHugeClaimedTree(t *testing.T) {
	base := hugeClaimedLog(t, http.NotFound)
	defer func() {
		if p := recover(); p != nil {
			t.Fatalf("the auditor panicked on a log claiming %d entries: %v", uint64(hugeSize), p)
		}
	}()
	mustBeIncomplete(t, base, "", audit.Options{Tiles: true, MaxTilesLeaves: math.MaxUint64})
}

// TestTilesBeyondTheBound: a log claiming more leaves than MaxTilesLeaves, and willing to serve
// bundles for ever, is refused before any bundle is read, with the size and the bound named.
func TestTilesBeyondTheBound(t *testing.T) {
	var bundles atomic.Int64
	base := hugeClaimedLog(t, func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.URL.Path, "/log/tile/entries/") || bundles.Add(1) > 3 {
			http.NotFound(w, r) // enough to end an unbounded audit of this test
			return
		}
		w.Write(bytes.Repeat([]byte{0, 1, 'x'}, torchwood.TileWidth))
	})
	_, err := runAudit(t, base, "", audit.Options{Tiles: true})
	if audit.ExitCode(err) != 2 || err == nil || !strings.Contains(err.Error(), strconv.FormatUint(hugeSize, 10)) ||
		!strings.Contains(err.Error(), strconv.Itoa(audit.DefaultMaxTilesLeaves)) {
		t.Errorf("want an incomplete audit (exit 2) naming size %d and bound %d, got exit %d: %v",
			uint64(hugeSize), audit.DefaultMaxTilesLeaves, audit.ExitCode(err), err)
	}
	if n := bundles.Load(); n != 0 {
		t.Errorf("%d entry bundles were read before the size was refused", n)
	}
}

const hugeSize = 1<<53 - 1 // the largest treeSize a histor.sth/v1 head can carry

// hugeClaimedLog serves a head and a checkpoint, both validly signed, of a tree of hugeSize
// leaves; tiles answers every other path.
func hugeClaimedLog(t *testing.T, tiles http.HandlerFunc) string {
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	pub := key.Public().(ed25519.PublicKey)
	did, origin := awr.DIDKey(pub), "huge.test/log"
	const size = hugeSize
	var root [32]byte
	rand.Read(root[:])
	body := fmt.Sprintf(`{"log":%q,"rootHash":%q,"timestamp":"2026-09-23T09:13:04Z","treeSize":%d,"type":%q}`,
		did, hex.EncodeToString(root[:]), uint64(size), format.STHType)
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
			tiles(w, r)
		}
	})
	return base
}
