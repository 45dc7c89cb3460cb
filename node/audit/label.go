package audit

import (
	"context"
	"fmt"
	"net/url"
	"strconv"

	"github.com/histor-observer/histor/log/awr"
	"github.com/histor-observer/histor/log/format"
)

// maxLabelBytes bounds a served label: the log keeps them under the 64 KiB tile entry limit,
// and a little more room lets a pretty-printed copy through to be canonicalised.
const maxLabelBytes = 1 << 18

// label checks that the label id is a valid AWR/2 document issued by this log, and that its
// leaf (SHA-256(0x00 ‖ JCS(label))) is in the tree under sth.
func (a *auditor) label(ctx context.Context, iss *issuerDoc, sth *head, id string) (*LabelReport, error) {
	path := "/api/v1/labels/" + url.PathEscape(id)
	doc, err := a.get(ctx, path, nil, maxLabelBytes)
	if err != nil {
		return nil, err
	}
	v, err := checkLabel(doc, iss.DID, id)
	if err != nil {
		return nil, err
	}
	index, hashes, err := a.labelProof(ctx, path, id, sth.Size)
	if err != nil {
		return nil, err
	}
	leaf := format.LeafHash(v.JCS) // the leaf input is JCS(label), whatever form was served
	if err := format.VerifyInclusion(index, sth.Size, leaf, hashes, sth.Root); err != nil {
		return nil, misbehaved("label", "label %s is not in the tree under the head of size %d: %v", id, sth.Size, err)
	}
	return &LabelReport{ID: id, LeafIndex: index, Inclusion: "ok"}, nil
}

// checkLabel verifies the label's Data Integrity proof and that this log issued it.
func checkLabel(doc []byte, did, id string) (*awr.Verified, error) {
	v, err := awr.Verify(doc)
	if err != nil {
		return nil, misbehaved("label", "label %s is not a valid AWR/2 document: %v", id, err)
	}
	if v.Issuer != did {
		return nil, misbehaved("label", "label %s was issued by %s, not by this log (%s)", id, v.Issuer, did)
	}
	if v.ID != id {
		return nil, misbehaved("label", "the log answered for label %s with label %s", id, v.ID)
	}
	return v, nil
}

func (a *auditor) labelProof(ctx context.Context, path, id string, size uint64) (uint64, [][32]byte, error) {
	var ans struct {
		LeafIndex      *uint64  `json:"leafIndex"`
		InclusionProof []string `json:"inclusionProof"`
	}
	q := url.Values{"tree_size": {strconv.FormatUint(size, 10)}}
	if err := a.getJSON(ctx, path+"/proof", q, &ans); err != nil {
		return 0, nil, err
	}
	if ans.LeafIndex == nil {
		return 0, nil, incomplete("reading "+path+"/proof", fmt.Errorf("no leafIndex in the answer"))
	}
	hashes, err := format.ParseHexHashes(ans.InclusionProof)
	if err != nil {
		return 0, nil, misbehaved("label", "the inclusion proof of label %s is malformed: %v", id, err)
	}
	return *ans.LeafIndex, hashes, nil
}
