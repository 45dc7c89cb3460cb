package submit_test

import (
	"bufio"
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/histor-observer/histor/log"
	"github.com/histor-observer/histor/log/awr"
	"github.com/histor-observer/histor/log/format"
	"github.com/histor-observer/histor/log/keys"
	"github.com/histor-observer/histor/log/logtest"
	"github.com/histor-observer/histor/witness/submit"
)

// litewitnessVersion is the torchwood release whose litewitness the interop test runs; it
// is the version go.mod requires.
const litewitnessVersion = "v0.6.1"

const litewitnessName = "litewitness.test/w"

// TestLitewitnessInterop submits checkpoints of a real log, as it grows, to litewitness
// (filippo.io/torchwood), a witness written elsewhere, and checks its cosignatures with
// our verifier and a tlog-policy. The log is added to litewitness's SQLite tables by
// hand, as witnessctl does (witnessctl itself does not build from the module proxy), and
// the witness key sits in a real ssh-agent. Then a fork of the log, signed by the same
// key, is refused by litewitness and reported by the Submitter.
func TestLitewitnessInterop(t *testing.T) {
	if testing.Short() {
		t.Skip("builds litewitness from the Go module proxy and runs it, ssh-agent and sqlite3: not under -short")
	}
	tools := lookTools(t, "go", "ssh-agent", "ssh-add", "sqlite3")
	dir := t.TempDir()
	bin := buildLitewitness(t, tools["go"], dir)
	wkey := ed25519.NewKeyFromSeed(make([]byte, 32))
	sock, fingerprint := startAgent(t, tools, dir, wkey)

	origin := "histor.test/interop"
	lkey := ed25519.NewKeyFromSeed([]byte("histor interop test log key 0001"))
	lg := openLog(t, filepath.Join(dir, "log"), origin, lkey)
	logVKey, _ := keys.NoteVerifierKey(origin, lkey.Public().(ed25519.PublicKey))
	db := filepath.Join(dir, "litewitness.db")
	addLog(t, tools["sqlite3"], db, origin, logVKey)
	addr := startLitewitness(t, bin, dir, db, sock, fingerprint, wkey)

	wvkey, _ := keys.CosignatureVerifierKey(litewitnessName, wkey.Public().(ed25519.PublicKey))
	policy, err := format.ParsePolicy([]byte("log " + logVKey + "\nwitness lw " + wvkey + " http://" + addr + "\nquorum lw\n"))
	if err != nil {
		t.Fatal(err)
	}
	ws, err := submit.PolicyWitnesses(policy)
	if err != nil {
		t.Fatal(err)
	}
	cfg := submit.Config{Origin: origin, Key: lkey.Public().(ed25519.PublicKey), Witnesses: ws,
		Proof: lg.ConsistencyProof, Policy: policy, Timeout: 5 * time.Second}
	s, err := submit.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var latencies []time.Duration
	for _, grow := range []int{1, 1, 2, 10, 100, 1000, 3, 5000, 1, 1} {
		appendLabels(t, lg, grow)
		head := lg.Latest()
		res, err := s.Submit(context.Background(), head.Checkpoint)
		if err != nil {
			t.Fatalf("size %d: %v", head.Size, err)
		}
		checkCosigned(t, policy, res, head)
		latencies = append(latencies, res.Outcomes[0].Elapsed)
	}
	checkWitnessState(t, tools["sqlite3"], db, lg.Latest())
	t.Logf("litewitness cosigned %d checkpoints up to size %d; latency per submission: first (new connection) %v, then %s",
		len(latencies), lg.Size(), latencies[0], summary(latencies[1:]))

	// A new Submitter knows nothing: litewitness answers old 0 with 409 and its size,
	// and the one retry proves from there.
	appendLabels(t, lg, 7)
	s2, err := submit.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	res, err := s2.Submit(context.Background(), lg.Latest().Checkpoint)
	if err != nil || res.Outcomes[0].Requests != 2 {
		t.Fatalf("fresh submitter: %+v, %v", res.Outcomes, err)
	}
	checkCosigned(t, policy, res, lg.Latest())
	t.Logf("fresh submitter: 409 then 200 in %v", res.Outcomes[0].Elapsed)

	checkForks(t, cfg, filepath.Join(dir, "fork"), origin, lkey, lg.Latest())
	checkWitnessState(t, tools["sqlite3"], db, lg.Latest())
}

// checkForks submits two forks of the log, signed by its key, that litewitness must
// refuse: one of the size it cosigned last, one larger.
func checkForks(t *testing.T, cfg submit.Config, dir, origin string, key ed25519.PrivateKey, cosigned log.Head) {
	t.Helper()
	fork := openLog(t, dir, origin, key)
	// Different labels from the first one on: no prefix of the fork is the log's.
	entries := []log.Entry{{ID: "urn:uuid:ffffffff-0000-4000-8000-000000000000", Label: []byte(`{"id":"urn:uuid:ffffffff-0000-4000-8000-000000000000","fork":true}`)}}
	if _, err := fork.Append(context.Background(), entries, nil); err != nil {
		t.Fatal(err)
	}
	for _, target := range []uint64{cosigned.Size, cosigned.Size + 5} {
		appendLabels(t, fork, int(target-fork.Size()))
		cfg.Proof = fork.ConsistencyProof
		s, err := submit.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		res, err := s.Submit(context.Background(), fork.Latest().Checkpoint)
		var inc *submit.InconsistencyError
		if !errors.As(err, &inc) {
			t.Fatalf("fork of size %d: err = %v, want an InconsistencyError", target, err)
		}
		if inc.Old != cosigned.Size || inc.Status != http.StatusUnprocessableEntity || res.Outcomes[0].Requests != 2 {
			t.Errorf("fork of size %d: %+v after %d requests", target, inc, res.Outcomes[0].Requests)
		}
		if res.Witnessed || s.Witnessed() != nil {
			t.Errorf("fork of size %d counts as witnessed", target)
		}
		t.Logf("fork of size %d: litewitness answered %d %q", target, inc.Status, inc.Body)
	}
}

func lookTools(t *testing.T, names ...string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, n := range names {
		p, err := exec.LookPath(n)
		if err != nil {
			t.Skipf("no %s on PATH, which the litewitness interop test needs", n)
		}
		out[n] = p
	}
	return out
}

// buildLitewitness installs litewitness at the pinned version into dir, outside this
// module, from the Go module proxy (or the module cache).
func buildLitewitness(t *testing.T, goTool, dir string) string {
	t.Helper()
	cmd := exec.Command(goTool, "install", "filippo.io/torchwood/cmd/litewitness@"+litewitnessVersion)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOBIN="+dir, "GOWORK=off", "GOFLAGS=")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building litewitness %s: %v\n%s", litewitnessVersion, err, out)
	}
	return filepath.Join(dir, "litewitness")
}

// startAgent runs a dedicated ssh-agent and loads the witness key into it with ssh-add.
func startAgent(t *testing.T, tools map[string]string, dir string, key ed25519.PrivateKey) (sock, fingerprint string) {
	t.Helper()
	sock = filepath.Join(dir, "agent.sock")
	agent := exec.Command(tools["ssh-agent"], "-D", "-a", sock)
	stdout, err := agent.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	startProcess(t, agent)
	// ssh-agent prints its environment lines once its socket listens.
	if _, err := bufio.NewReader(stdout).ReadString('\n'); err != nil {
		t.Fatalf("waiting for ssh-agent: %v", err)
	}
	go io.Copy(io.Discard, stdout)

	block, err := ssh.MarshalPrivateKey(key, "litewitness interop test")
	if err != nil {
		t.Fatal(err)
	}
	keyFile := filepath.Join(dir, "witness.pem")
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(block), 0o600); err != nil {
		t.Fatal(err)
	}
	add := exec.Command(tools["ssh-add"], keyFile)
	add.Env = append(os.Environ(), "SSH_AUTH_SOCK="+sock)
	if out, err := add.CombinedOutput(); err != nil {
		t.Fatalf("ssh-add: %v\n%s", err, out)
	}
	pub, err := ssh.NewPublicKey(key.Public())
	if err != nil {
		t.Fatal(err)
	}
	return sock, ssh.FingerprintSHA256(pub)
}

// startProcess starts cmd and, at cleanup, kills it (by its own process handle) and reaps it.
func startProcess(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", cmd.Path, err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
}

// addLog writes our log into litewitness's tables as witnessctl add-log and add-key do:
// size 0 with the empty tree's root, and the log's verifier key.
func addLog(t *testing.T, sqlite3, db, origin, vkey string) {
	t.Helper()
	empty := format.EmptyRoot()
	script := fmt.Sprintf(`PRAGMA foreign_keys = ON;
CREATE TABLE IF NOT EXISTS log (origin TEXT PRIMARY KEY, tree_size INTEGER NOT NULL, tree_hash TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS key (origin TEXT NOT NULL, key TEXT NOT NULL, FOREIGN KEY(origin) REFERENCES log(origin));
INSERT INTO log (origin, tree_size, tree_hash) VALUES ('%s', 0, '%s');
INSERT INTO key (origin, key) VALUES ('%s', '%s');
`, origin, base64.StdEncoding.EncodeToString(empty[:]), origin, vkey)
	cmd := exec.Command(sqlite3, db)
	cmd.Stdin = strings.NewReader(script)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("writing litewitness tables: %v\n%s", err, out)
	}
}

// checkWitnessState reads litewitness's record of our log: the head last cosigned.
func checkWitnessState(t *testing.T, sqlite3, db string, head log.Head) {
	t.Helper()
	out, err := exec.Command(sqlite3, db, "SELECT tree_size || ' ' || tree_hash FROM log").CombinedOutput()
	if err != nil {
		t.Fatalf("reading litewitness tables: %v\n%s", err, out)
	}
	if want := fmt.Sprintf("%d %s\n", head.Size, base64.StdEncoding.EncodeToString(head.Root[:])); string(out) != want {
		t.Errorf("litewitness holds %q, want %q", out, want)
	}
}

// startLitewitness runs litewitness on a free loopback port and waits until it answers.
// It also checks that the verifier key it logs is the one we derive for its name and key.
func startLitewitness(t *testing.T, bin, dir, db, sock, fingerprint string, key ed25519.PrivateKey) string {
	t.Helper()
	addr := freePort(t)
	cmd := exec.Command(bin, "-name="+litewitnessName, "-db="+db, "-ssh-agent="+sock, "-key="+fingerprint, "-listen="+addr)
	cmd.Dir = dir
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	startProcess(t, cmd)
	lines := &lockedLines{}
	go lines.read(stderr)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("litewitness said:\n%s", lines.String())
		}
	})
	waitHTTP(t, "http://"+addr+"/")
	want, _ := keys.CosignatureVerifierKey(litewitnessName, key.Public().(ed25519.PublicKey))
	// The line may still be on its way through the stderr reader.
	for deadline := time.Now().Add(20 * time.Second); !strings.Contains(lines.String(), "vkey="+want); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Errorf("litewitness does not log the verifier key %s:\n%s", want, lines.String())
			break
		}
	}
	return addr
}

func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// waitHTTP polls a real process's port until it answers: its readiness is an event in
// another process that nothing here can wait on directly.
func waitHTTP(t *testing.T, url string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := http.Get(url)
		if err == nil {
			resp.Body.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("litewitness did not answer at %s: %v", url, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

type lockedLines struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedLines) read(r io.Reader) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		l.mu.Lock()
		l.b.WriteString(sc.Text() + "\n")
		l.mu.Unlock()
	}
}

func (l *lockedLines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func openLog(t *testing.T, dir, origin string, key ed25519.PrivateKey) *log.Log {
	t.Helper()
	l, err := log.Open(context.Background(), log.Config{Dir: dir, Origin: origin, Key: key,
		DID: awr.DIDKey(key.Public().(ed25519.PublicKey)), CacheBytes: 8 << 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

func appendLabels(t *testing.T, l *log.Log, n int) {
	t.Helper()
	start := l.Size()
	entries := make([]log.Entry, n)
	for i := range entries {
		id, label := logtest.Label(start + uint64(i))
		entries[i] = log.Entry{ID: id, Label: label}
	}
	if _, err := l.Append(context.Background(), entries, nil); err != nil {
		t.Fatal(err)
	}
}

// checkCosigned checks litewitness's answer with our code: its line verifies under its
// key over the log's head, and the note meets the policy.
func checkCosigned(t *testing.T, p *format.Policy, res submit.Result, head log.Head) {
	t.Helper()
	o := res.Outcomes[0]
	c := format.Checkpoint{Origin: p.Logs[0].Origin, Size: head.Size, Root: head.Root}
	if o.Cosignature == nil || p.Witnesses[0].Cosigner.Verify(c, *o.Cosignature) != nil {
		t.Fatalf("size %d: cosignature %+v does not verify", head.Size, o.Cosignature)
	}
	if age := time.Since(time.Unix(int64(o.Cosignature.Time), 0)); age < -time.Second || age > time.Minute {
		t.Errorf("size %d: cosignature time %d is %v from now", head.Size, o.Cosignature.Time, age)
	}
	got, names, err := p.Verify(res.Note)
	if err != nil || got != c || !slices.Equal(names, []string{"lw"}) || !res.Witnessed {
		t.Errorf("size %d: policy: %+v, %v, %v, witnessed %v", head.Size, got, names, err, res.Witnessed)
	}
}

// summary is the median and maximum of some durations.
func summary(ds []time.Duration) string {
	s := slices.Clone(ds)
	slices.Sort(s)
	return fmt.Sprintf("median %v, max %v (n=%d)", s[len(s)/2], s[len(s)-1], len(s))
}
