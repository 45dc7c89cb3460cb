package gossip

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"

	pubsub "github.com/libp2p/go-libp2p-pubsub"
	pb "github.com/libp2p/go-libp2p-pubsub/pb"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/histor-observer/histor/gossip/wire"
)

// Topic names. The version is part of the name: a new message format is a new topic.
const (
	TopicHeads        = "/histor/heads/1"
	TopicObservations = "/histor/observations/1"
	TopicEvidence     = "/histor/evidence/1"
)

// Size caps per topic, checked before anything is parsed.
const (
	MaxEvidenceBytes = 48 << 10
	// maxRPCBytes bounds one pubsub RPC: the largest message with room for its framing.
	maxRPCBytes = 64 << 10
)

// msgIDLabel opens every hashed message ID, so the ID can never be confused with another hash
// of the same bytes.
const msgIDLabel = "histor/v1 gossip-message-id\n"

// MessageID is the content-addressed ID of data on topic: SHA-256 over a label, the topic's
// length and name, and the data. Parsers accept one spelling per message, so one logical
// message has one ID and duplicates are dropped before validation.
func MessageID(topic string, data []byte) string {
	h := sha256.New()
	h.Write([]byte(msgIDLabel))
	h.Write(binary.BigEndian.AppendUint32(nil, uint32(len(topic))))
	h.Write([]byte(topic))
	h.Write(data)
	return string(h.Sum(nil))
}

func messageID(m *pb.Message) string { return MessageID(m.GetTopic(), m.GetData()) }

// result is a validator's verdict and, for Reject, why.
type result struct {
	v   pubsub.ValidationResult
	why string
}

var accept = result{v: pubsub.ValidationAccept}

func reject(format string, a ...any) result {
	return result{pubsub.ValidationReject, fmt.Sprintf(format, a...)}
}
func ignore(format string, a ...any) result {
	return result{pubsub.ValidationIgnore, fmt.Sprintf(format, a...)}
}

// checkHead is the head topic's validator and the check of a pulled head: parse, find the
// observer, drop what cannot be news, then verify. It does no I/O.
func (n *Node) checkHead(msg []byte) (result, *Head) {
	if len(msg) > wire.MaxHeadBytes {
		return reject("oversized head"), nil
	}
	sth, _, _, err := wire.SplitHead(msg)
	if err != nil {
		return reject("%v", err), nil
	}
	obs, ok := n.members.lookup(sth.Log)
	if !ok {
		return reject("head of unknown observer %s", sth.Log), nil
	}
	if obs.self {
		return ignore("our own head"), nil
	}
	if n.heads.stale(obs.did, sth.TreeSize, msg) {
		return ignore("stale head"), nil
	}
	// A head's time is not checked against this node's clock: heads are ordered by tree
	// size, and a peer whose clock is off is shown with its offset (ProtoTime), not ignored.
	hd, err := wire.VerifyHead(msg, obs.pub, obs.origin, obs.witnesses)
	if err != nil {
		return reject("%v", err), nil
	}
	news, conflict := n.heads.offer(obs.did, hd)
	if conflict != nil {
		// Both are signed by the observer: the forwarder is honest, the log is not.
		n.report(func() { n.cfg.OnConflict(conflict, hd) }, n.cfg.OnConflict != nil)
		return accept, nil
	}
	if !news {
		return ignore("no news"), nil
	}
	return accept, hd
}

func (n *Node) checkObservation(msg []byte) (result, *Observation) {
	if len(msg) > wire.MaxObservationBytes {
		return reject("oversized observation"), nil
	}
	o, err := wire.ParseObservationText(msg)
	if err != nil {
		return reject("%v", err), nil
	}
	obs, ok := n.members.lookup(o.Observer)
	if !ok {
		return reject("observation of unknown observer %s", o.Observer), nil
	}
	if obs.self {
		return ignore("our own observation"), nil
	}
	if o, err = wire.VerifyObservation(msg, obs.pub, obs.origin); err != nil {
		return reject("%v", err), nil
	}
	return accept, o
}

func (n *Node) checkEvidence(msg []byte) result {
	if len(msg) > MaxEvidenceBytes {
		return reject("oversized evidence")
	}
	if n.cfg.VerifyEvidence == nil {
		return ignore("no evidence verifier")
	}
	if err := n.cfg.VerifyEvidence(msg); err != nil {
		return reject("%v", err)
	}
	return accept
}

// validator wraps a check as a pubsub validator: own publishes pass (they were checked when
// made; pubsub's Message.Local means something else, a publication kept in-process), a panic is an Ignore, and each verdict is counted.
func (n *Node) validator(topic string, check func([]byte) (result, any)) pubsub.ValidatorEx {
	return func(_ context.Context, from peer.ID, m *pubsub.Message) (res pubsub.ValidationResult) {
		if from == n.host.ID() {
			return pubsub.ValidationAccept
		}
		defer func() {
			if r := recover(); r != nil {
				n.log.Error("gossip validator panicked", "topic", topic, "panic", r)
				res = pubsub.ValidationIgnore
			}
			n.metrics.message(topic, res)
		}()
		r, v := check(m.Data)
		if r.v == pubsub.ValidationReject {
			n.log.Debug("rejected gossip message", "topic", topic, "from", from, "why", r.why)
		}
		m.ValidatorData = v
		return r.v
	}
}
