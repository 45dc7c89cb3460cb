package audit

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"

	"golang.org/x/mod/sumdb/note"

	"github.com/histor-observer/histor/log/awr"
	"github.com/histor-observer/histor/log/format"
)

// maxEvidenceListBytes bounds the /api/v1/evidence answer.
const maxEvidenceListBytes = 1 << 20

// ErrEquivocated marks the misbehaviour of a log that serves evidence of its own fork.
var ErrEquivocated = errors.New("equivocation")

// ReadPolicyFile reads a c2sp.org/tlog-policy file of at most format.MaxPolicyBytes.
func ReadPolicyFile(path string) (*format.Policy, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, format.MaxPolicyBytes+1))
	if err != nil {
		return nil, err
	}
	if len(b) > format.MaxPolicyBytes {
		return nil, fmt.Errorf("%s is over %d bytes", path, format.MaxPolicyBytes)
	}
	return format.ParsePolicy(b)
}

// federation is the federation part of an audit, run once the head passed, under a deadline
// of its own: the log's C2SP checkpoint is signed by its key and names the audited tree at the
// audited size; with a policy, its cosignatures meet it; and the log serves no equivocation
// evidence about itself.
func (a *auditor) federation(ctx context.Context, rep *Report) error {
	ctx, cancel := context.WithTimeout(ctx, a.deadline)
	defer cancel()
	pub, err := awr.ParseDIDKey(rep.DID)
	if err != nil {
		return &IncompleteError{Step: "reading the log's did:key", Err: err}
	}
	cp, err := a.get(ctx, "/log/checkpoint", nil, maxCheckpointBytes)
	if err != nil {
		return err
	}
	origin, _, _ := strings.Cut(string(cp), "\n")
	v, err := format.NewVerifier(origin, pub)
	if err != nil {
		return &MisbehaviourError{Check: "checkpoint", Reason: fmt.Sprintf("origin %q is not a key name", origin)}
	}
	if err := a.checkCheckpoint(cp, v, rep); err != nil {
		return err
	}
	return a.checkEvidence(ctx, v)
}

// checkCheckpoint: signed by the log's key, the audited root at the audited size, and,
// with a policy, cosigned by its quorum.
func (a *auditor) checkCheckpoint(cp []byte, v note.Verifier, rep *Report) error {
	c, err := format.ParseCheckpoint(cp, v)
	if err != nil {
		return &MisbehaviourError{Check: "checkpoint", Reason: "/log/checkpoint is not a checkpoint of the log's key", Err: err}
	}
	if !rep.Empty && c.Size == rep.TreeSize && hex.EncodeToString(c.Root[:]) != rep.RootHash {
		return &MisbehaviourError{Check: "consistency", Reason: fmt.Sprintf(
			"the checkpoint and the signed tree head of size %d name two roots, %x and %s", c.Size, c.Root, rep.RootHash)}
	}
	if a.opt.Policy == nil {
		return nil
	}
	_, cosigners, err := a.opt.Policy.Verify(cp)
	if err != nil {
		return &MisbehaviourError{Check: "witnessed", Reason: fmt.Sprintf(
			"the checkpoint of size %d does not meet the policy (cosigned by %s)", c.Size, cosignerNames(cosigners)), Err: err}
	}
	a.log.Info("checkpoint meets the witness policy", "size", c.Size, "cosigners", cosigners)
	return nil
}

func cosignerNames(list []string) string {
	if len(list) == 0 {
		return "none of its witnesses"
	}
	return strings.Join(list, ", ")
}

// checkEvidence fails the audit when the log serves, at /api/v1/evidence, a bundle its own
// key signed both halves of. A log without the route (a HISTOR observer) has none.
func (a *auditor) checkEvidence(ctx context.Context, v note.Verifier) error {
	var list struct {
		Evidence []struct {
			ID     string `json:"id"`
			Origin string `json:"origin"`
		} `json:"evidence"`
	}
	if err := a.getJSON(ctx, "/api/v1/evidence", nil, &list); err != nil {
		var se *statusError
		if errors.As(err, &se) && se.code == 404 {
			return nil
		}
		return err
	}
	for _, e := range list.Evidence {
		if e.Origin != v.Name() {
			continue
		}
		if err := a.checkBundle(ctx, e.ID, v); err != nil {
			return err
		}
	}
	return nil
}

func (a *auditor) checkBundle(ctx context.Context, id string, v note.Verifier) error {
	bundle, err := a.get(ctx, "/api/v1/evidence/"+url.PathEscape(id), nil, format.MaxEquivocationBytes)
	if err != nil {
		return err
	}
	e, err := format.VerifyEquivocation(bundle, v)
	if err != nil {
		a.log.Warn("the log serves evidence about itself that does not verify", "id", id, "err", err)
		return nil
	}
	return &MisbehaviourError{Check: "equivocation", Reason: fmt.Sprintf(
		"the log serves evidence %s that it signed two checkpoints that are not one tree (%s, sizes %d and %d)",
		id, e.Kind(), e.A.Size, e.B.Size), Err: ErrEquivocated}
}
