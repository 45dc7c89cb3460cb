package gossip

import (
	"context"
	"fmt"
	"time"

	pubsub "github.com/libp2p/go-libp2p-pubsub"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/histor-observer/histor/gossip/wire"
)

func (n *Node) startPubSub() error {
	params := pubsub.DefaultGossipSubParams()
	params.HeartbeatInterval = n.cfg.Heartbeat
	params.HeartbeatInitialDelay = min(params.HeartbeatInitialDelay, n.cfg.Heartbeat)
	topics := []string{TopicHeads, TopicObservations, TopicEvidence}
	ps, err := pubsub.NewGossipSub(n.ctx, n.host,
		pubsub.WithGossipSubParams(params),
		pubsub.WithMessageSignaturePolicy(pubsub.StrictNoSign),
		pubsub.WithNoAuthor(),
		pubsub.WithMessageIdFn(messageID),
		pubsub.WithMaxMessageSize(maxRPCBytes),
		pubsub.WithSeenMessagesTTL(n.cfg.Republish/2),
		pubsub.WithFloodPublish(true),
		pubsub.WithPeerExchange(false),
		pubsub.WithBlacklist(blacklist{m: n.members, self: n.host.ID()}),
		pubsub.WithSubscriptionFilter(pubsub.WrapLimitSubscriptionFilter(pubsub.NewAllowlistSubscriptionFilter(topics...), len(topics))),
		pubsub.WithPeerScore(n.scoreParams(topics), scoreThresholds()),
		pubsub.WithPeerScoreInspect(pubsub.PeerScoreInspectFn(n.inspectScores), n.cfg.Heartbeat),
		pubsub.WithLogger(n.log),
	)
	if err != nil {
		return fmt.Errorf("making gossipsub: %w", err)
	}
	n.ps = ps
	checks := map[string]func([]byte) (result, any){
		TopicHeads:        func(b []byte) (result, any) { r, h := n.checkHead(b); return r, h },
		TopicObservations: func(b []byte) (result, any) { r, o := n.checkObservation(b); return r, o },
		TopicEvidence:     func(b []byte) (result, any) { return n.checkEvidence(b), b },
	}
	for _, t := range topics {
		if err := n.join(t, checks[t]); err != nil {
			return err
		}
	}
	return nil
}

func (n *Node) join(topic string, check func([]byte) (result, any)) error {
	if err := n.ps.RegisterTopicValidator(topic, n.validator(topic, check),
		pubsub.WithValidatorTimeout(time.Second)); err != nil {
		return fmt.Errorf("registering validator of %s: %w", topic, err)
	}
	t, err := n.ps.Join(topic)
	if err != nil {
		return fmt.Errorf("joining %s: %w", topic, err)
	}
	sub, err := t.Subscribe(pubsub.WithBufferSize(256))
	if err != nil {
		return fmt.Errorf("subscribing to %s: %w", topic, err)
	}
	n.topics[topic] = t
	n.goLoop(func() { n.read(sub) })
	return nil
}

// read hands each accepted message of one topic to the node's callback, in order.
func (n *Node) read(sub *pubsub.Subscription) {
	defer sub.Cancel()
	for {
		m, err := sub.Next(n.ctx)
		if err != nil {
			return
		}
		if m.ReceivedFrom == n.host.ID() {
			continue
		}
		switch v := m.ValidatorData.(type) {
		case *Head:
			n.report(func() { n.cfg.OnHead(v) }, n.cfg.OnHead != nil)
		case *Observation:
			n.report(func() { n.cfg.OnObservation(v) }, n.cfg.OnObservation != nil)
		case []byte:
			n.report(func() { n.cfg.OnEvidence(v) }, n.cfg.OnEvidence != nil)
		}
	}
}

// PublishHead publishes the log's latest head; the node calls it when its log signs one.
func (n *Node) PublishHead(ctx context.Context) error {
	sth, cp := n.cfg.Log.Latest()
	if sth == nil {
		return nil
	}
	return n.publish(ctx, TopicHeads, wire.EncodeHead(sth, cp))
}

// PublishObservation publishes one of this observer's signed observation digests.
func (n *Node) PublishObservation(ctx context.Context, msg []byte) error {
	return n.publish(ctx, TopicObservations, msg)
}

// PublishEvidence publishes an equivocation bundle.
func (n *Node) PublishEvidence(ctx context.Context, bundle []byte) error {
	return n.publish(ctx, TopicEvidence, bundle)
}

func (n *Node) publish(ctx context.Context, topic string, data []byte) error {
	t := n.topics[topic]
	if t == nil {
		return fmt.Errorf("publishing on %s: not started", topic)
	}
	if err := t.Publish(ctx, data); err != nil {
		return fmt.Errorf("publishing on %s: %w", topic, err)
	}
	return nil
}

// republishLoop publishes the latest head again every Republish interval, so a peer that
// missed it (a partition, a full queue) gets it without asking, and measures the connected
// peers' clocks again (a clock that jumps shows at the next tick).
func (n *Node) republishLoop() {
	tick := time.NewTicker(n.cfg.Republish)
	defer tick.Stop()
	for {
		if err := n.PublishHead(n.ctx); err != nil && n.ctx.Err() == nil {
			n.log.Warn("republishing latest head", "err", err)
		}
		n.measureClocks()
		select {
		case <-n.ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// scoreParams penalise invalid messages hard and nothing else of note: in a federation of a
// few peers, mesh-delivery penalties punish quiet honest peers (Lotus disables them too).
func (n *Node) scoreParams(topics []string) *pubsub.PeerScoreParams {
	p := &pubsub.PeerScoreParams{
		SkipAtomicValidation: true,
		Topics:               map[string]*pubsub.TopicScoreParams{},
		AppSpecificScore: func(id peer.ID) float64 {
			if n.members.peerDID(id) != "" {
				return 100
			}
			return 0
		},
		AppSpecificWeight: 1,
		// Loopback and colocated test nodes share an IP; the gater is the membership check.
		IPColocationFactorWeight:  0,
		BehaviourPenaltyWeight:    -10,
		BehaviourPenaltyThreshold: 6,
		BehaviourPenaltyDecay:     pubsub.ScoreParameterDecay(time.Hour),
		DecayInterval:             time.Second,
		DecayToZero:               0.01,
		RetainScore:               6 * time.Hour,
	}
	for _, t := range topics {
		p.Topics[t] = &pubsub.TopicScoreParams{
			SkipAtomicValidation:           true,
			TopicWeight:                    1,
			TimeInMeshQuantum:              time.Second, // unweighted, but pubsub divides by it
			InvalidMessageDeliveriesWeight: -1000,
			InvalidMessageDeliveriesDecay:  pubsub.ScoreParameterDecay(time.Hour),
		}
	}
	return p
}

func scoreThresholds() *pubsub.PeerScoreThresholds {
	return &pubsub.PeerScoreThresholds{
		SkipAtomicValidation:        true,
		GossipThreshold:             -500,
		PublishThreshold:            -1000,
		GraylistThreshold:           -2500,
		AcceptPXThreshold:           1000,
		OpportunisticGraftThreshold: 3.5,
	}
}

func (n *Node) inspectScores(s map[peer.ID]float64) {
	n.scoresMu.Lock()
	defer n.scoresMu.Unlock()
	n.scores = s
}
