package peers_test

import (
	"testing"
	"time"

	"github.com/histor-observer/histor/node/peers"
)

// seen is what one observer's latest observation says in a table: a digest word, or a
// status when the word starts with "!".
type seen struct {
	observer int
	word     string
	at       time.Duration // after t0
}

func TestAgreementRules(t *testing.T) {
	obs := []*observer{newObserver(t, 1), newObserver(t, 2), newObserver(t, 3)}
	for _, tc := range []struct {
		name string
		seen []seen
		want peers.Agreement
	}{
		{"nobody", nil, peers.Agreement{Status: peers.Unobserved}},
		{"one observer", []seen{{0, "a", 0}},
			peers.Agreement{Status: peers.SingleObserver, Counts: peers.Counts{Observers: 1, WithDigest: 1, Digests: 1, Agreeing: 1}}},
		{"only a status", []seen{{0, "!timeout", 0}, {1, "!connect", 0}},
			peers.Agreement{Status: peers.Unobserved, Counts: peers.Counts{Observers: 2}}},
		{"one digest and a status", []seen{{0, "a", 0}, {1, "!timeout", time.Hour}},
			peers.Agreement{Status: peers.SingleObserver, Counts: peers.Counts{Observers: 2, WithDigest: 1, Digests: 1, Agreeing: 1}}},
		{"all three agree", []seen{{0, "a", 0}, {1, "a", time.Minute}, {2, "a", time.Hour}},
			peers.Agreement{Status: peers.Unanimous, Counts: peers.Counts{Observers: 3, WithDigest: 3, Digests: 1, Agreeing: 3}}},
		{"one sees another set", []seen{{0, "a", 0}, {1, "a", 0}, {2, "b", 0}},
			peers.Agreement{Status: peers.Split, Counts: peers.Counts{Observers: 3, WithDigest: 3, Digests: 2, Agreeing: 2}}},
		// Observations hold until the observer's next one: a day apart still overlap.
		{"a day apart, still held", []seen{{0, "a", 0}, {1, "b", 24 * time.Hour}},
			peers.Agreement{Status: peers.Split, Counts: peers.Counts{Observers: 2, WithDigest: 2, Digests: 2, Agreeing: 1}}},
		// A later observation replaces the observer's earlier one: a change seen by all.
		{"changed, seen by both", []seen{{0, "a", 0}, {1, "a", 0}, {0, "b", time.Hour}, {1, "b", 2 * time.Hour}},
			peers.Agreement{Status: peers.Unanimous, Counts: peers.Counts{Observers: 2, WithDigest: 2, Digests: 1, Agreeing: 2}}},
		// A status never displaces a digest: the timeout does not make it single-observer.
		{"a timeout after a digest", []seen{{0, "a", 0}, {1, "a", 0}, {1, "!timeout", time.Hour}},
			peers.Agreement{Status: peers.Unanimous, Counts: peers.Counts{Observers: 2, WithDigest: 2, Digests: 1, Agreeing: 2}}},
		{"three sets", []seen{{0, "a", 0}, {1, "b", 0}, {2, "c", 0}},
			peers.Agreement{Status: peers.Split, Counts: peers.Counts{Observers: 3, WithDigest: 3, Digests: 3, Agreeing: 1}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := openStore(t, "", obs[0], obs[1:]...)
			for _, x := range tc.seen {
				p := seenProven(t, obs[x.observer], x)
				if err := s.Add(p); err != nil {
					t.Fatalf("adding %+v: %v", x, err)
				}
			}
			if got := s.Agreement(serverID); got != tc.want {
				t.Errorf("agreement = %+v, want %+v", got, tc.want)
			}
			if got := s.Split(serverID); got != (tc.want.Status == peers.Split) {
				t.Errorf("Split = %v", got)
			}
			wantSplit := 0
			if tc.want.Status == peers.Split {
				wantSplit = 1
			}
			if got := len(s.SplitServers()); got != wantSplit {
				t.Errorf("SplitServers has %d servers, want %d", got, wantSplit)
			}
		})
	}
}
