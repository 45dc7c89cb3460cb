package command

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/urfave/cli/v2"
	"github.com/urfave/cli/v2/altsrc"
	"golang.org/x/mod/sumdb/note"

	"github.com/histor-observer/histor/log/awr"
	"github.com/histor-observer/histor/log/format"
	"github.com/histor-observer/histor/node/audit"
)

// auditFederationFlags are the audit's federation checks.
func auditFederationFlags() []cli.Flag {
	return []cli.Flag{
		altsrc.NewStringFlag(&cli.StringFlag{Name: "policy", Usage: "also check that /log/checkpoint is signed by a log of the tlog-policy `FILE` " +
			"and cosigned by a quorum of its witnesses", EnvVars: []string{"HISTOR_AUDIT_POLICY"}}),
	}
}

// Bounds of what the federation checks read.
const (
	maxEvidenceListBytes = 1 << 20
	maxPolicyFileBytes   = format.MaxPolicyBytes
)

// fedAudit is the federation part of one audit, run once the head passed: the log's C2SP
// checkpoint is signed by its key and names the audited tree at the audited size; with
// --policy, its cosignatures meet the policy; and the log serves no equivocation evidence
// about itself. It has a --deadline of its own.
type fedAudit struct {
	base     string
	client   *http.Client
	log      *slog.Logger
	policy   *format.Policy // nil without --policy
	deadline time.Duration
}

// newFedAudit reads the flags (and the policy file) before anything is fetched.
func newFedAudit(c *cli.Context, log *slog.Logger) (*fedAudit, error) {
	fa := &fedAudit{base: strings.TrimSuffix(c.Args().First(), "/"), log: log, deadline: c.Duration("deadline"),
		client: &http.Client{Timeout: c.Duration("timeout"),
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	if path := c.String("policy"); path != "" {
		p, err := readPolicyFile(path)
		if err != nil {
			return nil, usageError(fmt.Errorf("audit: --policy: %w", err))
		}
		fa.policy = p
	}
	return fa, nil
}

func readPolicyFile(path string) (*format.Policy, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxPolicyFileBytes+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxPolicyFileBytes {
		return nil, fmt.Errorf("%s is over %d bytes", path, maxPolicyFileBytes)
	}
	return format.ParsePolicy(b)
}

func (fa *fedAudit) run(ctx context.Context, rep *audit.Report) error {
	ctx, cancel := context.WithTimeout(ctx, fa.deadline)
	defer cancel()
	pub, err := awr.ParseDIDKey(rep.DID)
	if err != nil {
		return &audit.IncompleteError{Step: "reading the log's did:key", Err: err}
	}
	cp, status, err := fa.get(ctx, "/log/checkpoint", format.MaxCheckpointBytes)
	if err != nil || status != http.StatusOK {
		return &audit.IncompleteError{Step: "fetching /log/checkpoint", Err: statusErr(err, status)}
	}
	origin, _, _ := strings.Cut(string(cp), "\n")
	v, err := format.NewVerifier(origin, pub)
	if err != nil {
		return &audit.MisbehaviourError{Check: "checkpoint", Reason: fmt.Sprintf("origin %q is not a key name", origin)}
	}
	if err := fa.checkCheckpoint(cp, v, rep); err != nil {
		return err
	}
	return fa.checkEvidence(ctx, v)
}

// checkCheckpoint: signed by the log's key, the audited root at the audited size, and,
// with a policy, cosigned by its quorum.
func (fa *fedAudit) checkCheckpoint(cp []byte, v note.Verifier, rep *audit.Report) error {
	c, err := format.ParseCheckpoint(cp, v)
	if err != nil {
		return &audit.MisbehaviourError{Check: "checkpoint", Reason: "/log/checkpoint is not a checkpoint of the log's key", Err: err}
	}
	if !rep.Empty && c.Size == rep.TreeSize && hex.EncodeToString(c.Root[:]) != rep.RootHash {
		return &audit.MisbehaviourError{Check: "consistency", Reason: fmt.Sprintf(
			"the checkpoint and the signed tree head of size %d name two roots, %x and %s", c.Size, c.Root, rep.RootHash)}
	}
	if fa.policy == nil {
		return nil
	}
	_, cosigners, err := fa.policy.Verify(cp)
	if err != nil {
		return &audit.MisbehaviourError{Check: "witnessed", Reason: fmt.Sprintf(
			"the checkpoint of size %d does not meet the policy (cosigned by %s)", c.Size, names(cosigners)), Err: err}
	}
	fa.log.Info("checkpoint meets the witness policy", "size", c.Size, "cosigners", cosigners)
	return nil
}

func names(list []string) string {
	if len(list) == 0 {
		return "none of its witnesses"
	}
	return strings.Join(list, ", ")
}

// checkEvidence fails the audit when the log serves, at /api/v1/evidence, a bundle its own
// key signed both halves of. A log without the route (a HISTOR observer) has none.
func (fa *fedAudit) checkEvidence(ctx context.Context, v note.Verifier) error {
	body, status, err := fa.get(ctx, "/api/v1/evidence", maxEvidenceListBytes)
	if err == nil && status == http.StatusNotFound {
		return nil
	}
	if err != nil || status != http.StatusOK {
		return &audit.IncompleteError{Step: "fetching /api/v1/evidence", Err: statusErr(err, status)}
	}
	var list struct {
		Evidence []struct {
			ID     string `json:"id"`
			Origin string `json:"origin"`
		} `json:"evidence"`
	}
	if err := json.Unmarshal(body, &list); err != nil {
		return &audit.IncompleteError{Step: "reading /api/v1/evidence", Err: err}
	}
	for _, e := range list.Evidence {
		if e.Origin != v.Name() {
			continue
		}
		if err := fa.checkBundle(ctx, e.ID, v); err != nil {
			return err
		}
	}
	return nil
}

func (fa *fedAudit) checkBundle(ctx context.Context, id string, v note.Verifier) error {
	bundle, status, err := fa.get(ctx, "/api/v1/evidence/"+url.PathEscape(id), format.MaxEquivocationBytes)
	if err != nil || status != http.StatusOK {
		return &audit.IncompleteError{Step: "fetching evidence " + id, Err: statusErr(err, status)}
	}
	e, err := format.VerifyEquivocation(bundle, v)
	if err != nil {
		fa.log.Warn("the log serves evidence about itself that does not verify", "id", id, "err", err)
		return nil
	}
	return &audit.MisbehaviourError{Check: "equivocation", Reason: fmt.Sprintf(
		"the log serves evidence %s that it signed two checkpoints that are not one tree (%s, sizes %d and %d)",
		id, e.Kind(), e.A.Size, e.B.Size), Err: errEquivocated}
}

var errEquivocated = errors.New("equivocation")

// get fetches path under the base, reading at most max bytes.
func (fa *fedAudit) get(ctx context.Context, path string, max int) ([]byte, int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fa.base+path, nil)
	if err != nil {
		return nil, 0, err
	}
	resp, err := fa.client.Do(req)
	if err != nil {
		return nil, 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, int64(max)+1))
	if err == nil && len(b) > max {
		err = fmt.Errorf("%s: answer over %d bytes", path, max)
	}
	return b, resp.StatusCode, err
}

func statusErr(err error, status int) error {
	if err != nil {
		return err
	}
	return fmt.Errorf("answered %d", status)
}
