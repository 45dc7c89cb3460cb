package queue

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"slices"
	"strings"
	"time"

	"github.com/histor-observer/histor/sandbox"
)

// Job is one package version to observe. The node issues it; a worker
// takes it from the jobs stream.
type Job struct {
	ID       string         `json:"id"`     // 128 random bits, hex
	Target   string         `json:"target"` // canonical spec: npm:<name>@<version> or pypi:<name>==<version>
	Limits   sandbox.Limits `json:"limits"`
	IssuedAt time.Time      `json:"issuedAt"`
	// Token is a per-job random secret (256 bits, hex) that keys the
	// result's binding. Only the node and the worker that took the job know it.
	Token string `json:"token"`
	// Env names the environment variables the package's registry entry
	// declares; each gets a recognisable placeholder in the run.
	Env []string `json:"env,omitempty"`
}

// Result is what a worker sends back for one job.
type Result struct {
	JobID  string `json:"jobId"`
	Target string `json:"target"`
	// Worker is the NKey public key of the worker; the node checks it
	// against the subject the result was published on, which the server
	// lets only that key publish to. Empty on a poisoned result.
	Worker string `json:"worker,omitempty"`
	// Deliveries is the delivery attempt the result came from; on a
	// poisoned result, how many deliveries failed.
	Deliveries  int             `json:"deliveries,omitempty"`
	Observation json.RawMessage `json:"observation"` // a sandbox.Observation
	// Evidence holds bounded raw records keyed by their SRI digest
	// (sha256-, sha384- or sha512-, base64); the node checks every key.
	Evidence map[string][]byte `json:"evidence,omitempty"`
	// Binding is HMAC-SHA256 keyed by the job token over JobID, Target,
	// sha256(Observation) and the sorted evidence digests (see Bind).
	Binding []byte `json:"binding"`
}

// Poisoned reports whether r is the node's record of a job that failed on
// every delivery rather than a worker's answer.
func (r Result) Poisoned() bool { return r.Worker == "" && r.Binding == nil }

// maxTargetBytes bounds a target; the longest npm name is 214 bytes.
const maxTargetBytes = 512

// NewJob issues a job for target with fresh random ID and token.
func NewJob(target string, limits sandbox.Limits, now time.Time) (Job, error) {
	if err := checkTarget(target); err != nil {
		return Job{}, err
	}
	id, err := randomHex(16)
	if err != nil {
		return Job{}, fmt.Errorf("making job id: %w", err)
	}
	token, err := randomHex(32)
	if err != nil {
		return Job{}, fmt.Errorf("making job token: %w", err)
	}
	return Job{ID: id, Target: target, Limits: limits, IssuedAt: now.UTC(), Token: token}, nil
}

func randomHex(n int) (string, error) {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

// checkTarget refuses anything that is not a registry spec of printable
// bytes, so a target can serve as a message ID and a log field as it is.
func checkTarget(t string) error {
	if !strings.HasPrefix(t, "npm:") && !strings.HasPrefix(t, "pypi:") {
		return fmt.Errorf("target %q: want npm:<name>@<version> or pypi:<name>==<version>", t)
	}
	if len(t) > maxTargetBytes {
		return fmt.Errorf("target of %d bytes: at most %d", len(t), maxTargetBytes)
	}
	for i := 0; i < len(t); i++ {
		if t[i] <= ' ' || t[i] >= 0x7f {
			return fmt.Errorf("target %q: byte %d is not printable ASCII", t, i)
		}
	}
	return nil
}

func (j Job) check() error {
	if err := checkTarget(j.Target); err != nil {
		return err
	}
	if len(j.ID) != 32 || !isHex(j.ID) {
		return errors.New("job id is not 32 hex digits")
	}
	if len(j.Token) != 64 || !isHex(j.Token) {
		return errors.New("job token is not 64 hex digits")
	}
	return nil
}

func isHex(s string) bool {
	_, err := hex.DecodeString(s)
	return err == nil
}

// bindingLabel makes the binding's HMAC input mean one thing only.
const bindingLabel = "histor.queue-result/v1"

// Bind computes r's binding under the job token: HMAC-SHA256 over the
// label, JobID, Target, sha256(Observation) and the sorted evidence SRIs,
// each length-prefixed so no two results share an input.
func Bind(token string, r Result) []byte {
	mac := hmac.New(sha256.New, []byte(token))
	field := func(b []byte) {
		var n [4]byte
		binary.BigEndian.PutUint32(n[:], uint32(len(b)))
		mac.Write(n[:])
		mac.Write(b)
	}
	field([]byte(bindingLabel))
	field([]byte(r.JobID))
	field([]byte(r.Target))
	od := sha256.Sum256(r.Observation)
	field(od[:])
	keys := make([]string, 0, len(r.Evidence))
	for k := range r.Evidence {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		field([]byte(k))
	}
	return mac.Sum(nil)
}

// checkSRI reports whether sri is the digest of b.
func checkSRI(sri string, b []byte) error {
	alg, want, ok := strings.Cut(sri, "-")
	if !ok {
		return fmt.Errorf("evidence key %q is not an SRI digest", sri)
	}
	var h hash.Hash
	switch alg {
	case "sha256":
		h = sha256.New()
	case "sha384":
		h = sha512.New384()
	case "sha512":
		h = sha512.New()
	default:
		return fmt.Errorf("evidence key %q: algorithm %q", sri, alg)
	}
	h.Write(b)
	if base64.StdEncoding.EncodeToString(h.Sum(nil)) != want {
		return fmt.Errorf("evidence key %q does not match its bytes", sri)
	}
	return nil
}

// SRI is the sha256 SRI digest of b, the key a worker files evidence under.
func SRI(b []byte) string {
	d := sha256.Sum256(b)
	return "sha256-" + base64.StdEncoding.EncodeToString(d[:])
}
