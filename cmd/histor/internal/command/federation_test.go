package command

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	hlog "github.com/histor-observer/histor/log"
	"github.com/histor-observer/histor/log/format"
	"github.com/histor-observer/histor/log/keys"
	"github.com/histor-observer/histor/node"
)

// selfWitnessingNode serves a node whose witness witnesses another log, so it keeps evidence
// about its own log too; it returns the URL, the seed and the origin.
func selfWitnessingNode(t *testing.T, other string) (string, *keys.Seed, string) {
	t.Helper()
	sum := sha256.Sum256([]byte("audit federation test"))
	seed, err := keys.NewSeed(sum[:])
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "seed"), sum[:], 0o600); err != nil {
		t.Fatal(err)
	}
	const origin = "audited.test/log"
	n, err := node.New(node.Config{DataDir: dir, LogOrigin: origin, WitnessLogs: []string{other}})
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	entry := hlog.Entry{ID: "urn:uuid:00000000-0000-4000-8000-000000000001", Label: []byte(`{"n":1}`)}
	if _, err := n.Log().Append(context.Background(), []hlog.Entry{entry}, nil); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(n.Handler())
	t.Cleanup(srv.Close)
	return srv.URL, seed, origin
}

// otherLog is the ORIGIN=VKEY of a log nobody runs.
func otherLog(t *testing.T) string {
	pub, _, _ := ed25519.GenerateKey(nil)
	vkey, err := keys.NoteVerifierKey("other.test/log", pub)
	if err != nil {
		t.Fatal(err)
	}
	return "other.test/log=" + vkey
}

func writePolicy(t *testing.T, text string) string {
	path := filepath.Join(t.TempDir(), "policy")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestAuditPolicyAndEvidence: --policy passes a checkpoint its quorum cosigned and fails one
// it did not; a log that serves evidence of its own fork fails the audit.
func TestAuditPolicyAndEvidence(t *testing.T) {
	url, seed, origin := selfWitnessingNode(t, otherLog(t))
	logVkey, err := keys.NoteVerifierKey(origin, seed.LogKey().Public().(ed25519.PublicKey))
	if err != nil {
		t.Fatal(err)
	}
	_, witPub, _ := ed25519.GenerateKey(nil)
	witVkey, err := keys.CosignatureVerifierKey("absent.test/witness", witPub.Public().(ed25519.PublicKey))
	if err != nil {
		t.Fatal(err)
	}
	none := writePolicy(t, "log "+logVkey+"\nquorum none\n")
	absent := writePolicy(t, "log "+logVkey+"\nwitness w "+witVkey+"\nquorum w\n")
	if code, out, stderr := runCLI("audit", url, "--policy", none); code != 0 {
		t.Fatalf("quorum none: exit %d: %s%s", code, out, stderr)
	}
	if code, _, stderr := runCLI("audit", url, "--policy", absent); code != 1 || !strings.Contains(stderr, "witnessed") {
		t.Errorf("a witness that never cosigned: exit %d, %q; want 1", code, stderr)
	}
	if code, _, _ := runCLI("audit", url, "--policy", filepath.Join(t.TempDir(), "missing")); code == 0 || code == 1 {
		t.Errorf("a missing policy file: exit %d, want a usage error", code)
	}

	// The log's key signs two trees of size 7; its own witness is shown both.
	signer, err := keys.NoteSigner(origin, seed.LogKey())
	if err != nil {
		t.Fatal(err)
	}
	for i, root := range [][32]byte{{1}, {2}} {
		cp, err := format.SignCheckpoint(signer, format.Checkpoint{Origin: origin, Size: 7, Root: root})
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.Post(url+"/add-checkpoint", "text/plain", strings.NewReader(fmt.Sprintf("old %d\n\n%s", 7*i, cp)))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if want := []int{200, 422}[i]; resp.StatusCode != want {
			t.Fatalf("submission %d: %d, want %d", i, resp.StatusCode, want)
		}
	}
	if code, _, stderr := runCLI("audit", url); code != 1 || !strings.Contains(stderr, "equivocation") {
		t.Errorf("a log serving evidence of its own fork: exit %d, %q; want 1", code, stderr)
	}
}

func TestServeFederationFlags(t *testing.T) {
	other := otherLog(t)
	t.Setenv("HISTOR_ALLOW_OBSERVERS", "did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK")
	cfg, called, code, stderr := runServe(t, "serve", "--data", t.TempDir(),
		"--p2p-listen", "/ip4/127.0.0.1/tcp/4001", "--p2p-listen", "/ip4/127.0.0.1/udp/4001/quic-v1",
		"--witness-log", other, "--witness", "https://w.example="+strings.Split(other, "=")[1])
	if code == 0 && called {
		t.Fatalf("a signed-note key accepted as a cosignature/v1 key: %+v", cfg.Witnesses)
	}
	cfg, called, code, stderr = runServe(t, "serve", "--data", t.TempDir(),
		"--p2p-listen", "/ip4/127.0.0.1/tcp/4001", "--p2p-listen", "/ip4/127.0.0.1/udp/4001/quic-v1", "--witness-log", other)
	if code != 0 || !called {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if len(cfg.P2PListen) != 2 || len(cfg.WitnessLogs) != 1 || cfg.WitnessLogs[0] != other || len(cfg.AllowList) != 1 {
		t.Errorf("federation flags read as P2PListen %v WitnessLogs %v AllowList %v", cfg.P2PListen, cfg.WitnessLogs, cfg.AllowList)
	}
	if _, _, code, _ := runServe(t, "serve", "--data", t.TempDir(), "--peer", "did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK=/ip4/127.0.0.1/tcp/1/p2p/x"); code == 0 {
		t.Error("peers without --p2p-listen accepted")
	}
}
