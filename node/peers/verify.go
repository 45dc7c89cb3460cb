package peers

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"fmt"
	"time"

	"github.com/histor-observer/histor/gossip/wire"
	"github.com/histor-observer/histor/log/awr"
	"github.com/histor-observer/histor/log/canon"
	"github.com/histor-observer/histor/log/format"
	"github.com/histor-observer/histor/log/mtl"
)

// Proven is one observation digest with everything that proves it: what a node fetches
// after gossip hands it the digest (the label and an inclusion proof from the observer,
// over the request/response protocols) and what it keeps so anyone can re-prove it.
type Proven struct {
	// Observation is the signed observation digest, as gossiped (wire.SignObservation).
	Observation []byte
	// Label is the label as the observer's log holds it: the RFC 8785 bytes of the signed
	// label, one log entry.
	Label []byte
	// Proof is the inclusion proof of the label's leaf under Head.
	Proof [][32]byte
	// Head is the observer's signed histor.sth/v1 document of the tree the proof is for. Its
	// size may exceed the digest's size line (a later head includes the label too), never be
	// at or below the leaf index.
	Head []byte
}

// checked is what verify learns from a Proven that passes.
type checked struct {
	obs  *wire.Observation
	sth  *format.STH
	leaf [32]byte
}

// verify checks p against the observer's own key, which the did:key on its observer line
// names; allowed says whether that observer counts at all.
func verify(p Proven, allowed func(did string) bool) (*checked, error) {
	o, err := wire.ParseObservationText(p.Observation)
	if err != nil {
		return nil, &RefusedError{Reason: ErrMalformed, Detail: err}
	}
	refuse := func(reason, detail error) error {
		return &RefusedError{Observer: o.Observer, Server: o.Server, Reason: reason, Detail: detail}
	}
	if !allowed(o.Observer) {
		return nil, refuse(ErrUnknownObserver, nil)
	}
	claimed := o
	pub, err := awr.ParseDIDKey(o.Observer)
	if err != nil {
		return nil, refuse(ErrMalformed, err)
	}
	if o, err = wire.VerifyObservation(p.Observation, pub, ""); err != nil {
		return nil, &RefusedError{Observer: claimed.Observer, Server: claimed.Server, Reason: reasonOf(err), Detail: err}
	}
	sth, err := verifyHead(p.Head, pub, o)
	if err != nil {
		return nil, refuse(reasonOf(err), err)
	}
	leaf, err := verifyLabel(p.Label, o)
	if err != nil {
		return nil, refuse(reasonOf(err), err)
	}
	if err := format.VerifyInclusion(o.LeafIndex, sth.TreeSize, leaf, p.Proof, sth.Root); err != nil {
		return nil, refuse(ErrNotIncluded, err)
	}
	return &checked{obs: o, sth: sth, leaf: leaf}, nil
}

// reasonOf is the Err value a verification failure is reported with.
func reasonOf(err error) error {
	var sig *awr.SignatureError
	switch {
	case errors.Is(err, format.ErrSignature), errors.As(err, &sig):
		return ErrSignature
	case errors.Is(err, ErrHead):
		return ErrHead
	case errors.Is(err, ErrMismatch):
		return ErrMismatch
	}
	return ErrMalformed
}

func verifyHead(head []byte, pub ed25519.PublicKey, o *wire.Observation) (*format.STH, error) {
	sth, err := format.VerifySTH(head, pub)
	if err != nil {
		return nil, fmt.Errorf("verifying head: %w", err)
	}
	// Kept heads are evidence others re-check: one spelling, the one the log serves.
	if c, err := canon.Canonicalize(head); err != nil || !bytes.Equal(c, head) {
		return nil, errors.New("head is not in its canonical form")
	}
	if sth.Log != o.Observer {
		return nil, fmt.Errorf("%w: head of %s, not of the observer", ErrHead, sth.Log)
	}
	if o.LeafIndex >= sth.TreeSize {
		return nil, fmt.Errorf("%w: head of size %d does not hold leaf %d", ErrHead, sth.TreeSize, o.LeafIndex)
	}
	return sth, nil
}

// verifyLabel checks the label's own proof and that it says what o claims, and returns its
// leaf hash.
func verifyLabel(label []byte, o *wire.Observation) ([32]byte, error) {
	v, err := awr.VerifyLabel(label)
	if err != nil {
		return [32]byte{}, fmt.Errorf("verifying label: %w", err)
	}
	if !bytes.Equal(v.JCS, label) {
		return [32]byte{}, errors.New("label is not in its canonical (log entry) form")
	}
	if err := matchLabel(v, o); err != nil {
		return [32]byte{}, fmt.Errorf("%w: %w", ErrMismatch, err)
	}
	return format.LeafHash(label), nil
}

// matchLabel compares what the label says with what the observation claims.
func matchLabel(v *awr.Verified, o *wire.Observation) error {
	d := labelDetail(v.Document)
	switch {
	case v.Issuer != o.Observer:
		return fmt.Errorf("label issued by %s", v.Issuer)
	case v.ID != o.LabelID:
		return fmt.Errorf("label id %s", v.ID)
	case o.Endpoint != "" && mtl.ServerID(d.server, o.Endpoint) != o.Server:
		return errors.New("server id is not the label's server name with this endpoint")
	case o.Digest == "":
		return nil // a status: the label proves the observer observed the server, no more
	case d.digest != o.Digest:
		return fmt.Errorf("label's tool-set digest is %q", d.digest)
	case !d.observed.Equal(o.ObservedAt):
		return fmt.Errorf("label observed at %s", d.observed.Format(time.RFC3339))
	}
	return nil
}

type detail struct {
	server, digest string
	observed       time.Time
}

// labelDetail reads the members of credentialSubject.mcpTrustLabel every method restates.
func labelDetail(doc map[string]any) detail {
	cs, _ := doc["credentialSubject"].(map[string]any)
	l, _ := cs["mcpTrustLabel"].(map[string]any)
	srv, _ := l["server"].(map[string]any)
	ts, _ := l["toolSet"].(map[string]any)
	var d detail
	d.server, _ = srv["name"].(string)
	d.digest, _ = ts["digestSRI"].(string)
	at, _ := l["observedAt"].(string)
	d.observed, _ = time.Parse(time.RFC3339, at)
	return d
}
