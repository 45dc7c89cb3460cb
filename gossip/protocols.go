package gossip

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/histor-observer/histor/gossip/wire"
	"github.com/histor-observer/histor/log/format"
)

// Request/response protocols. Each exchange is one stream: the request, a half-close, then a
// response of a status line ("200", "404", … as the HTTP API would answer) and a body. Both
// sides bound what they read and set a deadline.
const (
	ProtoHead          protocol.ID = "/histor/head/1.0.0"
	ProtoDescriptor    protocol.ID = "/histor/descriptor/1.0.0"
	ProtoConsistency   protocol.ID = "/histor/consistency/1.0.0"
	ProtoInclusion     protocol.ID = "/histor/inclusion/1.0.0"
	ProtoLabel         protocol.ID = "/histor/label/1.0.0"
	ProtoAddCheckpoint protocol.ID = "/histor/add-checkpoint/1.0.0"
	// ProtoFetch reads a path of a peer's HTTP API (its log's tiles, its mirrors of other
	// logs, its evidence), so a log is read over the federation's own connections.
	ProtoFetch protocol.ID = "/histor/fetch/1.0.0"
)

// MaxFetchBytes bounds a fetch answer: an entry bundle of 256 labels of 32 KiB, and more.
const MaxFetchBytes = 16 << 20

const (
	maxRequestBytes  = 1 << 10
	maxProofResponse = 4 + format.MaxProofHashes*45
	maxLabelResponse = 4 + 21 + format.MaxEntryBytes
	maxAddCheckpoint = 64 << 10
)

// StatusError is a peer's answer other than 200.
type StatusError struct {
	Protocol protocol.ID
	Status   int
	Body     string // clipped
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("%s answered %d: %s", e.Protocol, e.Status, e.Body)
}

type handlerFunc func(ctx context.Context, did string, req []byte) (int, []byte)

func (n *Node) setHandlers() {
	h := n.host
	h.SetStreamHandler(ProtoHead, n.serve(ProtoHead, 0, n.serveHead))
	h.SetStreamHandler(ProtoDescriptor, n.serve(ProtoDescriptor, 0, n.serveDescriptor))
	h.SetStreamHandler(ProtoConsistency, n.serve(ProtoConsistency, maxRequestBytes, n.serveConsistency))
	h.SetStreamHandler(ProtoInclusion, n.serve(ProtoInclusion, maxRequestBytes, n.serveInclusion))
	h.SetStreamHandler(ProtoLabel, n.serve(ProtoLabel, maxRequestBytes, n.serveLabel))
	h.SetStreamHandler(ProtoTime, n.serve(ProtoTime, 0, n.serveTime))
	if n.cfg.Fetch != nil {
		h.SetStreamHandler(ProtoFetch, n.serve(ProtoFetch, maxRequestBytes, n.serveFetch))
	}
	if n.cfg.AddCheckpoint != nil {
		h.SetStreamHandler(ProtoAddCheckpoint, n.serve(ProtoAddCheckpoint, maxAddCheckpoint, handlerFunc(n.cfg.AddCheckpoint)))
	}
}

// serve wraps fn as a stream handler that answers federation peers only.
func (n *Node) serve(proto protocol.ID, maxReq int, fn handlerFunc) network.StreamHandler {
	return func(s network.Stream) {
		did := n.members.peerDID(s.Conn().RemotePeer())
		if did == "" {
			// The gater keeps strangers out; this holds where no gater runs.
			s.Reset()
			return
		}
		ctx, cancel := context.WithTimeout(n.ctx, n.cfg.RequestTimeout)
		defer cancel()
		deadline, _ := ctx.Deadline()
		s.SetDeadline(deadline)
		req, err := io.ReadAll(io.LimitReader(s, int64(maxReq)+1))
		if err != nil || len(req) > maxReq {
			s.Reset()
			return
		}
		status, body := fn(ctx, did, req)
		n.metrics.request(string(proto), status)
		if _, err := s.Write(append([]byte(strconv.Itoa(status)+"\n"), body...)); err != nil {
			s.Reset()
			return
		}
		s.Close()
	}
}

func (n *Node) serveHead(context.Context, string, []byte) (int, []byte) {
	sth, cp := n.cfg.Log.Latest()
	if sth == nil {
		return 404, []byte("the log is empty")
	}
	return 200, wire.EncodeHead(sth, cp)
}

func (n *Node) serveDescriptor(context.Context, string, []byte) (int, []byte) {
	return 200, n.cfg.Descriptor
}

func (n *Node) serveConsistency(_ context.Context, _ string, req []byte) (int, []byte) {
	a, b, err := twoNumbers(req)
	if err != nil || a > b {
		return 400, []byte("want <first> <second>")
	}
	p, err := n.cfg.Log.ConsistencyProof(a, b)
	return proofAnswer(p, err)
}

func (n *Node) serveInclusion(_ context.Context, _ string, req []byte) (int, []byte) {
	a, b, err := twoNumbers(req)
	if err != nil || a >= b {
		return 400, []byte("want <index> <size>")
	}
	p, err := n.cfg.Log.InclusionProof(a, b)
	return proofAnswer(p, err)
}

func (n *Node) serveLabel(_ context.Context, _ string, req []byte) (int, []byte) {
	id, ok := strings.CutSuffix(string(req), "\n")
	if !ok || id == "" || strings.ContainsAny(id, " \n") {
		return 400, []byte("want <label id>")
	}
	i, label, err := n.cfg.Log.Label(id)
	if errors.Is(err, ErrNotFound) {
		return 404, []byte("no such label")
	}
	if err != nil {
		n.log.Warn("serving label", "id", id, "err", err)
		return 500, []byte("reading the log failed")
	}
	return 200, append([]byte(strconv.FormatUint(i, 10)+"\n"), label...)
}

func (n *Node) serveFetch(ctx context.Context, did string, req []byte) (int, []byte) {
	path, ok := strings.CutSuffix(string(req), "\n")
	if !ok || path == "" || strings.ContainsAny(path, " \n") {
		return 400, []byte("want <path>")
	}
	status, body := n.cfg.Fetch(ctx, did, path)
	if len(body) > MaxFetchBytes {
		return 500, []byte("answer over the fetch bound")
	}
	return status, body
}

func proofAnswer(p [][32]byte, err error) (int, []byte) {
	if errors.Is(err, ErrNotFound) {
		return 404, []byte("beyond the log")
	}
	if err != nil {
		return 400, []byte("no such proof")
	}
	var b bytes.Buffer
	for _, h := range p {
		b.WriteString(base64.StdEncoding.EncodeToString(h[:]) + "\n")
	}
	return 200, b.Bytes()
}

// twoNumbers parses "<a> <b>\n" in canonical decimals.
func twoNumbers(req []byte) (uint64, uint64, error) {
	line, ok := strings.CutSuffix(string(req), "\n")
	as, bs, ok2 := strings.Cut(line, " ")
	a, err1 := strconv.ParseUint(as, 10, 63)
	b, err2 := strconv.ParseUint(bs, 10, 63)
	if !ok || !ok2 || err1 != nil || err2 != nil || strconv.FormatUint(a, 10) != as || strconv.FormatUint(b, 10) != bs {
		return 0, 0, errors.New("bad numbers")
	}
	return a, b, nil
}

// parseProof reads the hash lines of a proof answer strictly.
func parseProof(body []byte) ([][32]byte, error) {
	text := string(body)
	if text == "" {
		return nil, nil
	}
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	if !strings.HasSuffix(text, "\n") || len(lines) > format.MaxProofHashes {
		return nil, errors.New("parsing proof: not up to 128 newline-terminated hashes")
	}
	out := make([][32]byte, len(lines))
	for i, l := range lines {
		raw, err := base64.StdEncoding.Strict().DecodeString(l)
		if err != nil || len(raw) != 32 || base64.StdEncoding.EncodeToString(raw) != l {
			return nil, fmt.Errorf("parsing proof: hash %d is not 32 bytes of base64", i)
		}
		copy(out[i][:], raw)
	}
	return out, nil
}

// request runs one exchange with peer p and returns the 200 body, or a *StatusError.
func (n *Node) request(ctx context.Context, p peer.ID, proto protocol.ID, req []byte, maxResp int) ([]byte, error) {
	status, body, err := n.exchange(ctx, p, proto, req, maxResp)
	if err != nil {
		return nil, err
	}
	if status != 200 {
		return nil, &StatusError{Protocol: proto, Status: status, Body: string(body[:min(len(body), 200)])}
	}
	return body, nil
}

func (n *Node) exchange(ctx context.Context, p peer.ID, proto protocol.ID, req []byte, maxResp int) (int, []byte, error) {
	ctx, cancel := context.WithTimeout(ctx, n.cfg.RequestTimeout)
	defer cancel()
	s, err := n.host.NewStream(ctx, p, proto)
	if err != nil {
		return 0, nil, fmt.Errorf("opening %s to %s: %w", proto, p, err)
	}
	deadline, _ := ctx.Deadline()
	s.SetDeadline(deadline)
	if _, err := s.Write(req); err != nil {
		s.Reset()
		return 0, nil, fmt.Errorf("sending %s request: %w", proto, err)
	}
	if err := s.CloseWrite(); err != nil {
		s.Reset()
		return 0, nil, fmt.Errorf("sending %s request: %w", proto, err)
	}
	resp, err := io.ReadAll(io.LimitReader(s, int64(maxResp)+5))
	if err != nil {
		s.Reset()
		return 0, nil, fmt.Errorf("reading %s answer: %w", proto, err)
	}
	s.Close()
	return parseAnswer(proto, resp, maxResp)
}

func parseAnswer(proto protocol.ID, resp []byte, maxResp int) (int, []byte, error) {
	line, body, ok := bytes.Cut(resp, []byte("\n"))
	status, err := strconv.Atoi(string(line))
	if !ok || err != nil || len(line) != 3 || status < 100 {
		return 0, nil, fmt.Errorf("reading %s answer: no status line", proto)
	}
	if len(body) > maxResp {
		return 0, nil, fmt.Errorf("reading %s answer: longer than %d bytes", proto, maxResp)
	}
	return status, body, nil
}

// peerOf finds the federation peer of an observer.
func (n *Node) peerOf(did string) (peer.ID, error) {
	n.members.mu.RLock()
	defer n.members.mu.RUnlock()
	if mb := n.members.byDID[did]; mb != nil && mb.peer != "" {
		return mb.peer, nil
	}
	return "", fmt.Errorf("observer %s is no federation peer", did)
}

// LatestHead fetches an observer's latest head and verifies it (the kept heads are not
// changed; see Heads).
func (n *Node) LatestHead(ctx context.Context, did string) (*Head, error) {
	p, err := n.peerOf(did)
	if err != nil {
		return nil, err
	}
	body, err := n.request(ctx, p, ProtoHead, nil, wire.MaxHeadBytes)
	if err != nil {
		return nil, err
	}
	obs, _ := n.members.lookup(did)
	return wire.VerifyHead(body, obs.pub, obs.origin, obs.witnesses)
}

// ConsistencyProof fetches from an observer the proof that its tree of size first is a
// prefix of its tree of size second. The caller checks it against heads it verified.
func (n *Node) ConsistencyProof(ctx context.Context, did string, first, second uint64) ([][32]byte, error) {
	return n.proof(ctx, did, ProtoConsistency, first, second)
}

// InclusionProof fetches from an observer the proof that leaf index is in its tree of size.
func (n *Node) InclusionProof(ctx context.Context, did string, index, size uint64) ([][32]byte, error) {
	return n.proof(ctx, did, ProtoInclusion, index, size)
}

func (n *Node) proof(ctx context.Context, did string, proto protocol.ID, a, b uint64) ([][32]byte, error) {
	p, err := n.peerOf(did)
	if err != nil {
		return nil, err
	}
	body, err := n.request(ctx, p, proto, fmt.Appendf(nil, "%d %d\n", a, b), maxProofResponse)
	if err != nil {
		return nil, err
	}
	return parseProof(body)
}

// Label fetches a label by id from an observer, with the leaf index it claims; the caller
// proves it with InclusionProof.
func (n *Node) Label(ctx context.Context, did, id string) (uint64, []byte, error) {
	p, err := n.peerOf(did)
	if err != nil {
		return 0, nil, err
	}
	body, err := n.request(ctx, p, ProtoLabel, []byte(id+"\n"), maxLabelResponse)
	if err != nil {
		return 0, nil, err
	}
	line, label, ok := bytes.Cut(body, []byte("\n"))
	i, err := strconv.ParseUint(string(line), 10, 63)
	if !ok || err != nil || strconv.FormatUint(i, 10) != string(line) || len(label) == 0 {
		return 0, nil, errors.New("reading label answer: want <index> and the label")
	}
	return i, label, nil
}

// AddCheckpoint sends a tlog-witness add-checkpoint request to an observer's witness and
// returns its status and body as they are.
func (n *Node) AddCheckpoint(ctx context.Context, did string, req []byte) (int, []byte, error) {
	p, err := n.peerOf(did)
	if err != nil {
		return 0, nil, err
	}
	return n.exchange(ctx, p, ProtoAddCheckpoint, req, maxAddCheckpoint)
}

// Fetch reads path (see Config.Fetch) from the peer that is observer did, at most max bytes
// (up to MaxFetchBytes); an answer other than 200 is a *StatusError.
func (n *Node) Fetch(ctx context.Context, did, path string, max int) ([]byte, error) {
	p, err := n.peerOf(did)
	if err != nil {
		return nil, err
	}
	return n.request(ctx, p, ProtoFetch, []byte(path+"\n"), min(max, MaxFetchBytes))
}

// Connected lists the observers this host holds a connection to, sorted.
func (n *Node) Connected() []string {
	var out []string
	for _, id := range n.host.Network().Peers() {
		if did := n.members.peerDID(id); did != "" {
			out = append(out, did)
		}
	}
	slices.Sort(out)
	return out
}
