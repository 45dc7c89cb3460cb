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
	"time"

	hlog "github.com/histor-observer/histor/log"
	"github.com/histor-observer/histor/log/format"
	"github.com/histor-observer/histor/log/keys"
	"github.com/histor-observer/histor/node"
)

// testSeed is a seed made from a name, so a test can know a node's keys before it starts.
func testSeed(t *testing.T, dir, name string) *keys.Seed {
	t.Helper()
	sum := sha256.Sum256([]byte(name))
	seed, err := keys.NewSeed(sum[:])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "seed"), sum[:], 0o600); err != nil {
		t.Fatal(err)
	}
	return seed
}

// serveConfig opens a node on cfg and serves its API; it returns the node and its URL.
func serveConfig(t *testing.T, cfg node.Config) (*node.Node, string) {
	t.Helper()
	n, err := node.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	srv := httptest.NewServer(n.Handler())
	t.Cleanup(srv.Close)
	return n, srv.URL
}

// selfWitnessingNode serves a node whose witness witnesses another log, so it keeps evidence
// about its own log too, and which submits its checkpoints to a witness node of its own
// (name w.test/witness); it returns the URL, the seed, the origin and that witness's key.
func selfWitnessingNode(t *testing.T, other string) (string, *keys.Seed, string, string) {
	t.Helper()
	const origin = "audited.test/log"
	dir := t.TempDir()
	seed := testSeed(t, dir, "audit federation test")
	logVkey, err := keys.NoteVerifierKey(origin, seed.LogKey().Public().(ed25519.PublicKey))
	if err != nil {
		t.Fatal(err)
	}
	wdir := t.TempDir()
	wseed := testSeed(t, wdir, "audit federation witness")
	witVkey, err := keys.CosignatureVerifierKey("w.test/witness", wseed.WitnessKey().Public().(ed25519.PublicKey))
	if err != nil {
		t.Fatal(err)
	}
	_, wurl := serveConfig(t, node.Config{DataDir: wdir, LogOrigin: "w.test/log", WitnessLogs: []string{origin + "=" + logVkey}})
	n, url := serveConfig(t, node.Config{DataDir: dir, LogOrigin: origin, WitnessLogs: []string{other}, Witnesses: []string{wurl + "=" + witVkey}})
	entry := hlog.Entry{ID: "urn:uuid:00000000-0000-4000-8000-000000000001", Label: []byte(`{"n":1}`)}
	if _, err := n.Log().Append(context.Background(), []hlog.Entry{entry}, nil); err != nil {
		t.Fatal(err)
	}
	return url, seed, origin, witVkey
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
	url, seed, origin, witVkey := selfWitnessingNode(t, otherLog(t))
	logVkey, err := keys.NoteVerifierKey(origin, seed.LogKey().Public().(ed25519.PublicKey))
	if err != nil {
		t.Fatal(err)
	}
	absentPub, _, _ := ed25519.GenerateKey(nil)
	absentVkey, err := keys.CosignatureVerifierKey("absent.test/witness", absentPub)
	if err != nil {
		t.Fatal(err)
	}
	cosigned := writePolicy(t, "log "+logVkey+"\nwitness w "+witVkey+"\nquorum w\n")
	absent := writePolicy(t, "log "+logVkey+"\nwitness a "+absentVkey+"\nquorum a\n")
	both := writePolicy(t, "log "+logVkey+"\nwitness w "+witVkey+"\nwitness a "+absentVkey+"\ngroup g 2 w a\nquorum g\n")
	// The node submits its checkpoint to w as it appends; the audit passes once w's
	// cosignature is on /log/checkpoint.
	deadline := time.Now().Add(20 * time.Second)
	for {
		code, out, stderr := runCLI("audit", url, "--policy", cosigned)
		if code == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a checkpoint its quorum's witness cosigned: exit %d: %s%s", code, out, stderr)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if code, _, stderr := runCLI("audit", url, "--policy", absent); code != 1 || !strings.Contains(stderr, "witnessed") {
		t.Errorf("a witness that never cosigned: exit %d, %q; want 1", code, stderr)
	}
	if code, _, stderr := runCLI("audit", url, "--policy", both); code != 1 || !strings.Contains(stderr, "witnessed") {
		t.Errorf("one cosignature of a quorum of two: exit %d, %q; want 1", code, stderr)
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
