package format

import (
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"golang.org/x/mod/sumdb/note"

	"github.com/histor-observer/histor/log/keys"
)

// Bounds of ParsePolicy. c2sp.org/tlog-policy asks an implementation to
// support at least 32 logs, 32 witnesses and 32 groups; these leave room
// while keeping one evaluation a few thousand steps at most.
const (
	MaxPolicyBytes     = 128 << 10
	MaxPolicyLogs      = 256
	MaxPolicyWitnesses = 256
	MaxPolicyGroups    = 256
)

// quorumNone is the predefined name of the quorum that needs no cosignature.
const quorumNone = "none"

// ErrNoQuorum is wrapped by Policy.Verify when a checkpoint is signed by a
// listed log but its cosignatures do not meet the policy's quorum.
var ErrNoQuorum = errors.New("cosignatures do not meet the quorum")

// Policy is a parsed c2sp.org/tlog-policy: the logs whose checkpoints it
// accepts, the witnesses it knows and the quorum of them a checkpoint needs.
type Policy struct {
	Logs      []PolicyLog
	Witnesses []PolicyWitness
	// Quorum is the name on the quorum line: a witness, a group, or "none",
	// which needs no cosignature.
	Quorum string

	// nodes are the named witnesses and groups in definition order, so a
	// group's members always come before it; names maps a name to its node.
	nodes []policyNode
	names map[string]int
	// quorum is the node index of the quorum, or -1 for "quorum none".
	quorum int
}

// PolicyLog is one "log <vkey> [<url>]" line.
type PolicyLog struct {
	Origin string // the vkey's key name, which is the log's checkpoint origin
	Key    ed25519.PublicKey
	URL    string // "" when the line has none
}

// PolicyWitness is one "witness <name> <vkey> [<url>]" line.
type PolicyWitness struct {
	Name     string   // the name the policy's groups use; it means nothing outside the file
	Cosigner Cosigner // the cosignature/v1 key; its Name is the one in signature lines
	URL      string   // the witness's submission prefix, "" when the line has none
}

// policyNode is a witness (witness >= 0) or a group of k of its members.
type policyNode struct {
	witness int
	k       int
	members []int
}

// ParsePolicy parses a tlog-policy file strictly: only tab, newline and
// printable or high-bit octets; every line, the last included, ends in a
// newline; the four directives with exactly their fields; groups and the
// quorum name only what earlier lines define; no duplicate key, name or
// member; exactly one quorum line. URLs, when given, must be absolute http
// or https URLs.
func ParsePolicy(text []byte) (*Policy, error) {
	if len(text) > MaxPolicyBytes {
		return nil, fmt.Errorf("parsing policy: %d bytes, at most %d", len(text), MaxPolicyBytes)
	}
	if err := policyChars(text); err != nil {
		return nil, fmt.Errorf("parsing policy: %w", err)
	}
	p := &Policy{names: map[string]int{}, quorum: -1}
	lines := strings.Split(string(text), "\n")
	if last := lines[len(lines)-1]; last != "" {
		return nil, fmt.Errorf("parsing policy: line %d does not end in a newline", len(lines))
	}
	quorumSeen := false
	for i, line := range lines[:len(lines)-1] {
		f := strings.FieldsFunc(line, func(r rune) bool { return r == ' ' || r == '\t' })
		if len(f) == 0 || strings.HasPrefix(f[0], "#") {
			continue
		}
		if err := p.directive(f, &quorumSeen); err != nil {
			return nil, fmt.Errorf("parsing policy: line %d: %w", i+1, err)
		}
	}
	if !quorumSeen {
		return nil, errors.New("parsing policy: no quorum line")
	}
	return p, nil
}

// directive adds one line's directive, its fields f.
func (p *Policy) directive(f []string, quorumSeen *bool) error {
	switch f[0] {
	case "log":
		return p.addLog(f[1:])
	case "witness":
		return p.addWitness(f[1:])
	case "group":
		return p.addGroup(f[1:])
	case "quorum":
		if *quorumSeen {
			return errors.New("a second quorum line")
		}
		*quorumSeen = true
		return p.setQuorum(f[1:])
	}
	return fmt.Errorf("unknown directive %q", f[0])
}

// policyChars allows what the spec allows: 0x09, 0x0A, 0x20–0x7E, 0x80–0xFF.
func policyChars(text []byte) error {
	for i, b := range text {
		if b < 0x20 && b != '\t' && b != '\n' || b == 0x7f {
			return fmt.Errorf("control byte 0x%02x at offset %d", b, i)
		}
	}
	return nil
}

func (p *Policy) addLog(f []string) error {
	if len(f) != 1 && len(f) != 2 {
		return errors.New("want log <vkey> [<url>]")
	}
	if len(p.Logs) == MaxPolicyLogs {
		return fmt.Errorf("more than %d logs", MaxPolicyLogs)
	}
	origin, key, err := parseLogKey(f[0])
	if err != nil {
		return err
	}
	for _, l := range p.Logs {
		if l.Key.Equal(key) {
			return fmt.Errorf("log key of %s listed twice", origin)
		}
	}
	u, err := policyURL(f[1:])
	if err != nil {
		return err
	}
	p.Logs = append(p.Logs, PolicyLog{Origin: origin, Key: key, URL: u})
	return nil
}

// parseLogKey parses an Ed25519 signed-note vkey in its one canonical
// spelling: the one keys.NoteVerifierKey writes for its name and key.
func parseLogKey(vkey string) (string, ed25519.PublicKey, error) {
	name, rest, ok1 := strings.Cut(vkey, "+")
	_, b64, ok2 := strings.Cut(rest, "+")
	raw, err := base64.StdEncoding.Strict().DecodeString(b64)
	if !ok1 || !ok2 || err != nil || len(raw) != 1+ed25519.PublicKeySize || raw[0] != 0x01 {
		return "", nil, errors.New("log key is not an Ed25519 signed-note verifier key")
	}
	pub := ed25519.PublicKey(raw[1:])
	if want, err := keys.NoteVerifierKey(name, pub); err != nil || want != vkey {
		return "", nil, fmt.Errorf("log key %q is not in canonical form (bad name, key ID or base64)", vkey)
	}
	return name, pub, nil
}

// policyURL checks the optional URL field.
func policyURL(f []string) (string, error) {
	if len(f) == 0 {
		return "", nil
	}
	u, err := url.Parse(f[0])
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return "", fmt.Errorf("URL %q is not an absolute http or https URL", f[0])
	}
	return f[0], nil
}

func (p *Policy) addWitness(f []string) error {
	if len(f) != 2 && len(f) != 3 {
		return errors.New("want witness <name> <vkey> [<url>]")
	}
	if len(p.Witnesses) == MaxPolicyWitnesses {
		return fmt.Errorf("more than %d witnesses", MaxPolicyWitnesses)
	}
	if err := p.newName(f[0]); err != nil {
		return err
	}
	c, err := ParseCosignerKey(f[1])
	if err != nil {
		return fmt.Errorf("witness %s: %w", f[0], err)
	}
	for _, w := range p.Witnesses {
		if w.Cosigner.Key.Equal(c.Key) {
			return fmt.Errorf("witness %s has the key of witness %s", f[0], w.Name)
		}
	}
	u, err := policyURL(f[2:])
	if err != nil {
		return err
	}
	p.names[f[0]] = len(p.nodes)
	p.nodes = append(p.nodes, policyNode{witness: len(p.Witnesses), k: 1})
	p.Witnesses = append(p.Witnesses, PolicyWitness{Name: f[0], Cosigner: c, URL: u})
	return nil
}

// newName refuses a name already defined and the predefined "none".
func (p *Policy) newName(name string) error {
	if name == quorumNone {
		return errors.New(`"none" is predefined`)
	}
	if _, ok := p.names[name]; ok {
		return fmt.Errorf("name %q defined twice", name)
	}
	return nil
}

func (p *Policy) addGroup(f []string) error {
	if len(f) < 3 {
		return errors.New("want group <name> all|any|<k> <member>...")
	}
	if len(p.nodes)-len(p.Witnesses) == MaxPolicyGroups {
		return fmt.Errorf("more than %d groups", MaxPolicyGroups)
	}
	if err := p.newName(f[0]); err != nil {
		return err
	}
	members, err := p.members(f[2:])
	if err != nil {
		return fmt.Errorf("group %s: %w", f[0], err)
	}
	k, err := threshold(f[1], len(members))
	if err != nil {
		return fmt.Errorf("group %s: %w", f[0], err)
	}
	p.names[f[0]] = len(p.nodes)
	p.nodes = append(p.nodes, policyNode{witness: -1, k: k, members: members})
	return nil
}

// members resolves a group's member names, each defined earlier and listed once.
func (p *Policy) members(names []string) ([]int, error) {
	out := make([]int, 0, len(names))
	seen := map[int]bool{}
	for _, m := range names {
		i, ok := p.names[m]
		if !ok {
			return nil, fmt.Errorf("member %q is not defined on an earlier line", m)
		}
		if seen[i] {
			return nil, fmt.Errorf("member %q listed twice", m)
		}
		seen[i] = true
		out = append(out, i)
	}
	return out, nil
}

// threshold reads all, any or a canonical decimal k with 1 <= k <= n.
func threshold(s string, n int) (int, error) {
	switch s {
	case "all":
		return n, nil
	case "any":
		return 1, nil
	}
	k, err := strconv.Atoi(s)
	if err != nil || strconv.Itoa(k) != s || k < 1 || k > n {
		return 0, fmt.Errorf("threshold %q is not all, any or a decimal from 1 to %d", s, n)
	}
	return k, nil
}

func (p *Policy) setQuorum(f []string) error {
	if len(f) != 1 {
		return errors.New("want quorum <name>")
	}
	p.Quorum = f[0]
	if f[0] == quorumNone {
		return nil
	}
	i, ok := p.names[f[0]]
	if !ok {
		return fmt.Errorf("quorum %q is not defined on an earlier line", f[0])
	}
	p.quorum = i
	return nil
}

// Check reports which of the policy's witnesses (by policy name, in policy
// order) cosigned c among sigs, and whether they meet the quorum. A line by
// a key the policy does not list, or whose signature does not verify over
// c, counts for nothing; a witness counts once however many lines it has.
func (p *Policy) Check(c Checkpoint, sigs []Cosignature) (cosigned []string, met bool) {
	ok := make([]bool, len(p.Witnesses))
	for _, s := range sigs {
		for i, w := range p.Witnesses {
			if !ok[i] && w.Cosigner.Matches(s) && w.Cosigner.Verify(c, s) == nil {
				ok[i] = true
			}
		}
	}
	for i, w := range p.Witnesses {
		if ok[i] {
			cosigned = append(cosigned, w.Name)
		}
	}
	return cosigned, p.met(ok)
}

// met evaluates the nodes in definition order: each group's members are
// already decided when it is reached.
func (p *Policy) met(cosigned []bool) bool {
	if p.quorum < 0 {
		return true
	}
	done := make([]bool, len(p.nodes))
	for i, n := range p.nodes {
		if n.witness >= 0 {
			done[i] = cosigned[n.witness]
			continue
		}
		count := 0
		for _, m := range n.members {
			if done[m] {
				count++
			}
		}
		done[i] = count >= n.k
	}
	return done[p.quorum]
}

// Verify checks a cosigned checkpoint note against the policy: signed by one
// of its logs (ParseCheckpoint's strict rules), with cosignatures meeting
// the quorum. It returns the checkpoint and the witnesses that cosigned it;
// a checkpoint short of the quorum is reported wrapping ErrNoQuorum, along
// with what did verify.
func (p *Policy) Verify(msg []byte) (Checkpoint, []string, error) {
	c, n, err := p.openLogged(msg)
	if err != nil {
		return Checkpoint{}, nil, fmt.Errorf("verifying against policy: %w", err)
	}
	cosigned, met := p.Check(c, noteCosignatures(n))
	if !met {
		return c, cosigned, fmt.Errorf("verifying against policy: %s at size %d, cosigned by %d witnesses: %w",
			c.Origin, c.Size, len(cosigned), ErrNoQuorum)
	}
	return c, cosigned, nil
}

// openLogged finds a listed log with the checkpoint's origin whose signature
// verifies. One origin may be listed with several keys (a key rotation).
func (p *Policy) openLogged(msg []byte) (Checkpoint, *note.Note, error) {
	origin, _, _ := strings.Cut(string(msg), "\n")
	var errs []error
	for _, l := range p.Logs {
		if l.Origin != origin {
			continue
		}
		v, err := NewVerifier(l.Origin, l.Key)
		if err != nil {
			return Checkpoint{}, nil, err
		}
		c, err := ParseCheckpoint(msg, v)
		if err == nil {
			n, err := note.Open(msg, note.VerifierList(v))
			return c, n, err
		}
		errs = append(errs, err)
	}
	if errs == nil {
		return Checkpoint{}, nil, fmt.Errorf("origin %q is not a log of the policy", origin)
	}
	return Checkpoint{}, nil, errors.Join(errs...)
}

// noteCosignatures reads the cosignature/v1 lines among a note's signatures
// by keys other than the log's; other kinds of lines are skipped.
func noteCosignatures(n *note.Note) []Cosignature {
	var out []Cosignature
	for _, s := range n.UnverifiedSigs {
		if c, err := ParseCosignature(sigPrefix + s.Name + " " + s.Base64); err == nil {
			out = append(out, c)
		}
	}
	return out
}
