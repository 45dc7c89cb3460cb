package audit

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"

	"github.com/histor-observer/histor/log/awr"
	"github.com/histor-observer/histor/log/format"
)

// issuerDoc is the part of /api/v1/issuer the auditor uses.
type issuerDoc struct {
	DID     string `json:"did"`
	Origin  string `json:"logOrigin"`
	LogVkey string `json:"logVkey"`

	pub ed25519.PublicKey // the key inside DID
}

func (a *auditor) issuer(ctx context.Context) (*issuerDoc, error) {
	var iss issuerDoc
	if err := a.getJSON(ctx, "/api/v1/issuer", nil, &iss); err != nil {
		return nil, err
	}
	pub, err := awr.ParseDIDKey(iss.DID)
	if err != nil {
		return nil, incomplete("reading /api/v1/issuer", fmt.Errorf("the log's did is unusable: %w", err))
	}
	iss.pub = pub
	return &iss, nil
}

// latestHead fetches the latest signed tree head and verifies it against the log's did:key.
func (a *auditor) latestHead(ctx context.Context, iss *issuerDoc) (*head, error) {
	return a.fetchHead(ctx, "/api/v1/log/sth", iss)
}

func (a *auditor) fetchHead(ctx context.Context, path string, iss *issuerDoc) (*head, error) {
	doc, err := a.get(ctx, path, nil, maxJSONBytes)
	if err != nil {
		return nil, err
	}
	// Like any unreadable answer, a document that is no tree head at all (a proxy's error page,
	// say) says nothing yet about the log's honesty. One that says it is a histor.sth/v1 head is
	// held to it: any malformed member or failed signature is the log's doing.
	if !claimsToBeHead(doc) {
		return nil, incomplete("reading "+path, errors.New("not a tree head: no JSON object of type "+format.STHType))
	}
	h, err := verifyHead(doc, iss.pub)
	if err != nil {
		return nil, misbehaved("signature", "the tree head at %s does not verify against %s: %v", path, iss.DID, err)
	}
	if h.Log != iss.DID {
		return nil, misbehaved("signature", "the tree head at %s names log %q, not %s", path, h.Log, iss.DID)
	}
	return h, nil
}

// consistency proves that sth extends the kept head, and says how.
func (a *auditor) consistency(ctx context.Context, kept, sth *head) (string, error) {
	switch {
	case kept == nil:
		return "", nil
	case sth.Size < kept.Size:
		return "", misbehaved("consistency", "the log shrank: kept %d, now %d", kept.Size, sth.Size)
	case sth.Size == kept.Size:
		if err := format.CheckConsistency(kept.signed(), sth.signed(), nil); err != nil {
			return "", forked("consistency", err, "same size %d, different root (kept %s, now %s): the log rewrote its history",
				sth.Size, kept.rootHex(), sth.rootHex())
		}
		return "unchanged", nil
	case kept.Size == 0:
		// Every tree extends the empty one, but the kept empty head must really be empty.
		if kept.Root != format.EmptyRoot() {
			return "", misbehaved("consistency", "the kept head of size 0 has root %s, not the empty root", kept.rootHex())
		}
		return fmt.Sprintf("ok (0 → %d)", sth.Size), nil
	}
	hashes, err := a.consistencyProof(ctx, kept.Size, sth.Size)
	if err != nil {
		return "", err
	}
	if err := format.CheckConsistency(kept.signed(), sth.signed(), hashes); err != nil {
		return "", forked("consistency", err, "the head of size %d is NOT consistent with the head kept at size %d: %v",
			sth.Size, kept.Size, errors.Unwrap(err))
	}
	return fmt.Sprintf("ok (%d → %d)", kept.Size, sth.Size), nil
}

func (a *auditor) consistencyProof(ctx context.Context, first, second uint64) ([][32]byte, error) {
	var ans struct {
		Proof []string `json:"proof"`
	}
	q := url.Values{"first": {strconv.FormatUint(first, 10)}, "second": {strconv.FormatUint(second, 10)}}
	if err := a.getJSON(ctx, "/api/v1/log/proof/consistency", q, &ans); err != nil {
		return nil, err
	}
	hashes, err := format.ParseHexHashes(ans.Proof)
	if err != nil {
		return nil, misbehaved("consistency", "the consistency proof %d → %d is malformed: %v", first, second, err)
	}
	return hashes, nil
}

// claimsToBeHead reports whether doc is a JSON object whose type member is histor.sth/v1,
// whatever else it holds.
func claimsToBeHead(doc []byte) bool {
	var probe map[string]json.RawMessage
	if json.Unmarshal(doc, &probe) != nil {
		return false
	}
	var typ string
	return json.Unmarshal(probe["type"], &typ) == nil && typ == format.STHType
}
