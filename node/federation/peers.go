package federation

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"golang.org/x/mod/sumdb/note"

	"github.com/histor-observer/histor/gossip"
	hlog "github.com/histor-observer/histor/log"
	"github.com/histor-observer/histor/log/format"
	"github.com/histor-observer/histor/witness"
)

// onPeerHead is gossip's OnHead: it keeps the head for the peer loop, which
// fetches proofs, so gossip's goroutines never wait on a peer.
func (f *Federation) onPeerHead(h *gossip.Head) {
	f.mu.Lock()
	if cur := f.peerHeads[h.STH.Log]; cur == nil || cur.STH.TreeSize <= h.STH.TreeSize {
		f.peerHeads[h.STH.Log] = h
	}
	f.mu.Unlock()
	signal(f.peerWake)
	if f.mirrorBehind(h.STH.Log, h.STH.TreeSize) {
		f.wantMirror(h.STH.Log)
	}
}

// peerLoop checks the peers' new heads one at a time, then proves the
// peers' new observations under them.
func (f *Federation) peerLoop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-f.peerWake:
		}
		f.mu.Lock()
		pending := f.peerHeads
		f.peerHeads = map[string]*gossip.Head{}
		f.mu.Unlock()
		for _, h := range pending {
			if ctx.Err() != nil {
				return
			}
			f.checkPeerHead(ctx, h)
		}
	}
}

// checkPeerHead checks a peer's head against the last one this node
// verified of that peer: one size, one root; a larger size, a consistency
// proof the peer serves that verifies. Anything else is evidence. A proof
// that cannot be fetched leaves the last verified head as it is, so the
// next head is checked from it.
func (f *Federation) checkPeerHead(ctx context.Context, h *gossip.Head) {
	v, err := headVerifier(h)
	if err != nil {
		f.logger.Error("checking a peer's head", "err", err)
		return
	}
	did := h.STH.Log
	if f.forked[did] {
		return // one bundle proves the fork; later heads add nothing
	}
	if first, ok := f.peerOrigins[did]; ok && first != v.Name() {
		f.logger.Warn("a peer's head names another origin than its first", "peer", did, "first", first, "now", v.Name())
		return
	}
	f.peerOrigins[did] = v.Name()
	f.witnessPeer(v)
	prev := f.verifiedHead(did)
	switch {
	case prev == nil || prev.STH.TreeSize == 0:
		f.setVerifiedHead(did, h)
		return
	case h.STH.TreeSize < prev.STH.TreeSize:
		return // older than what was checked; gossip keeps the newest
	case h.STH.TreeSize == prev.STH.TreeSize:
		if h.STH.Root != prev.STH.Root {
			f.makeEvidence(prev.CheckpointNote, h.CheckpointNote, nil, v)
			f.forked[did] = true
		}
		return
	}
	proof, err := f.fetchConsistency(ctx, did, prev.STH.TreeSize, h.STH.TreeSize)
	if err != nil {
		f.logger.Warn("fetching a peer's consistency proof", "peer", did, "from", prev.STH.TreeSize, "to", h.STH.TreeSize, "err", err)
		return
	}
	if format.VerifyConsistency(prev.STH.TreeSize, h.STH.TreeSize, proof, prev.STH.Root, h.STH.Root) != nil {
		f.makeEvidence(prev.CheckpointNote, h.CheckpointNote, proof, v)
		f.forked[did] = true
		return
	}
	f.setVerifiedHead(did, h)
}

func (f *Federation) fetchConsistency(ctx context.Context, did string, first, second uint64) ([][32]byte, error) {
	g := f.gos.Load()
	if g == nil {
		return nil, errors.New("gossip is not running")
	}
	ctx, cancel := context.WithTimeout(ctx, peerHeadTimeout)
	defer cancel()
	return g.ConsistencyProof(ctx, did, first, second)
}

// witnessPeer makes the witness witness a peer's log, as its heads name it
// (a peer given by did:key is known by its origin only from them).
func (f *Federation) witnessPeer(v note.Verifier) {
	if have := f.verifier(v.Name()); have != nil && have.KeyHash() == v.KeyHash() {
		return
	}
	w := f.wit.Load()
	if w == nil {
		return
	}
	if err := w.AddLog(v); err != nil {
		f.logger.Warn("witnessing a peer's log", "origin", v.Name(), "err", err)
		return
	}
	f.setVerifier(v)
}

// gossipLog is what gossip serves of this node's log.
type gossipLog struct {
	log Log
	f   *Federation
}

func (g gossipLog) Latest() (sth, checkpoint []byte) {
	h := g.log.Latest()
	if h.STH == nil {
		return nil, nil
	}
	return h.STH, g.f.CosignedCheckpoint(h)
}

func (g gossipLog) ConsistencyProof(first, second uint64) ([][32]byte, error) {
	return g.log.ConsistencyProof(first, second)
}

func (g gossipLog) InclusionProof(index, size uint64) ([][32]byte, error) {
	return g.log.InclusionProof(index, size)
}

func (g gossipLog) Label(id string) (uint64, []byte, error) {
	i, err := g.log.LabelIndex(id)
	if errors.Is(err, hlog.ErrNotFound) {
		return 0, nil, fmt.Errorf("%w: %w", gossip.ErrNotFound, err)
	}
	if err != nil {
		return 0, nil, err
	}
	label, err := g.log.Entry(i)
	if err != nil {
		return 0, nil, err
	}
	return i, label, nil
}

// submitTransport carries the submitter's add-checkpoint requests: to a
// peer's witness over gossip when the host is one of p2p's, otherwise over
// HTTP.
type submitTransport struct {
	p2p    map[string]string // host → did:key of the peer; fixed at start
	gossip func() *gossip.Node
	http   http.RoundTripper
}

func newSubmitTransport(p2p map[string]string, g func() *gossip.Node) *submitTransport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = 4
	return &submitTransport{p2p: p2p, gossip: g, http: t}
}

// maxSubmitBody bounds an add-checkpoint body: a checkpoint and a proof.
const maxSubmitBody = 64 << 10

func (t *submitTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	did, ok := t.p2p[req.URL.Host]
	if !ok {
		return t.http.RoundTrip(req)
	}
	body, err := io.ReadAll(io.LimitReader(req.Body, maxSubmitBody+1))
	req.Body.Close()
	if err != nil || len(body) > maxSubmitBody {
		return nil, fmt.Errorf("reading add-checkpoint body: %v", err)
	}
	g := t.gossip()
	if g == nil {
		return nil, errors.New("gossip is not running")
	}
	status, answer, err := g.AddCheckpoint(req.Context(), did, body)
	if err != nil {
		return nil, err
	}
	return &http.Response{StatusCode: status, Status: strconv.Itoa(status) + " " + http.StatusText(status),
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, Request: req,
		Header: http.Header{"Content-Type": {answerType(status, answer)}}, ContentLength: int64(len(answer)),
		Body: io.NopCloser(bytes.NewReader(answer))}, nil
}

// answerType gives back the media type gossip's answer does not carry: a
// 409 whose body is one decimal line names the witness's size.
func answerType(status int, body []byte) string {
	if s, ok := strings.CutSuffix(string(body), "\n"); ok && status == http.StatusConflict {
		if n, err := strconv.ParseUint(s, 10, 64); err == nil && strconv.FormatUint(n, 10) == s {
			return witness.ContentTypeSize
		}
	}
	return "text/plain; charset=utf-8"
}
