package gossip

import (
	"bytes"
	"context"
	"testing"
	"time"

	pubsub "github.com/libp2p/go-libp2p-pubsub"
	pb "github.com/libp2p/go-libp2p-pubsub/pb"

	"github.com/histor-observer/histor/gossip/wire"
)

// TestAbusivePeerPenalised: an allow-listed peer whose GossipSub runs no validators sends
// forged, malformed, oversized, replayed and flooding head messages. The honest nodes reject
// them, its score falls below zero, and the honest nodes still converge.
func TestAbusivePeerPenalised(t *testing.T) {
	c := newCluster(t, 3, nil)
	bad := c.hosts[2]
	c.nodes[2].Close() // the third observer's host is driven by hand below
	c.nodes = c.nodes[:2]
	for i := range 2 {
		c.logs[i].set(c.obs[i].head(t, 1, 0))
	}
	c.start(t)
	ps, err := pubsub.NewGossipSub(context.Background(), bad,
		pubsub.WithMessageSignaturePolicy(pubsub.StrictNoSign), pubsub.WithNoAuthor(),
		pubsub.WithMessageIdFn(func(m *pb.Message) string { return MessageID(m.GetTopic(), m.GetData()) }))
	if err != nil {
		t.Fatal(err)
	}
	topic, err := ps.Join(TopicHeads)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range c.hosts[:2] {
		c.mn.ConnectPeers(bad.ID(), h.ID())
	}
	eventually(t, "the abusive peer in the topic", 10*time.Second, func() bool { return len(topic.ListPeers()) == 2 })

	sth, cp := c.obs[2].head(t, 9, 0)
	good := wire.EncodeHead(sth, cp)
	forged := bytes.Clone(good)
	forged[len(forged)-10] ^= 'A' ^ 'B' // the checkpoint signature
	otherSTH, _ := c.obs[2].head(t, 9, 1)
	mixed := wire.EncodeHead(otherSTH, cp) // two validly signed documents of different trees
	sth0, cp0 := c.obs[0].head(t, 1, 0)
	msgs := [][]byte{
		forged, mixed,
		[]byte("not a head"),
		append([]byte(wire.HeadType+"\n"), bytes.Repeat([]byte("x"), wire.MaxHeadBytes)...),
		wire.EncodeHead(sth0, cp0), // a replay of an honest node's current head: ignored, not penalised
	}
	for i := range 30 { // flood: distinct malformed messages
		msgs = append(msgs, []byte{byte(i), 'x'})
	}
	for _, m := range msgs {
		if err := topic.Publish(context.Background(), m); err != nil {
			t.Fatalf("publishing: %v", err)
		}
	}
	for i, nd := range c.nodes {
		eventually(t, "a negative score", 10*time.Second, func() bool {
			s, ok := nd.PeerScores()[bad.ID()]
			return ok && s < 0
		})
		if s := nd.PeerScores()[c.hosts[1-i].ID()]; s < 0 {
			t.Errorf("node %d scores its honest peer %v", i, s)
		}
		if h := nd.Heads()[c.obs[2].did]; h != nil {
			t.Errorf("node %d kept a head of the abusive peer: size %d", i, h.STH.TreeSize)
		}
	}
	c.logs[0].set(c.obs[0].head(t, 4, 0))
	eventually(t, "honest gossip after the abuse", 10*time.Second, func() bool {
		c.nodes[0].PublishHead(context.Background())
		return sees(c.nodes[1], c.obs[0], 4)
	})
}
