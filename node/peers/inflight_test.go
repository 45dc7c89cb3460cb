package peers_test

import (
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/vfs"

	"github.com/histor-observer/histor/internal/faultfs"
	"github.com/histor-observer/histor/internal/pebbledb"
	"github.com/histor-observer/histor/node/mirror"
	"github.com/histor-observer/histor/node/peers"
)

// TestReadsDuringWrite: Observers reads each kept observation's summary from memory and its
// signed record from Pebble, which shows a write before its WAL sync returns (and keeps
// showing it when the sync fails). A write of the same observer's later observation that
// lands between the two must not give an entry whose summary is one observation and whose
// record another: the Prove of a mirrored observer read first starts that write and waits
// for its sync to be held, then the entry read is checked whole; after the sync returns
// the entry is the new observation, and after it fails the one acknowledged before.
func TestReadsDuringWrite(t *testing.T) {
	obs := []*observer{newObserver(t, 21), newObserver(t, 22), newObserver(t, 23)}
	slices.SortFunc(obs, func(a, b *observer) int { return strings.Compare(a.did, b.did) })
	mirrored, b, self := obs[0], obs[1], obs[2] // the mirrored observer is read before b
	bFirst := b.observe(t, digest("x"), t0)
	bLater := b.observe(t, digest("y"), t0.Add(time.Hour))
	for _, fails := range []bool{false, true} {
		t.Run(map[bool]string{false: "synced", true: "failed"}[fails], func(t *testing.T) {
			defer func(wait time.Duration) { pebbledb.FatalCloseWait = wait }(pebbledb.FatalCloseWait)
			pebbledb.FatalCloseWait = 200 * time.Millisecond
			h := faultfs.NewHold()
			var s *peers.Store
			var arm atomic.Bool
			wrote := make(chan error, 1)
			prove := func(string, uint64) (mirror.Proof, error) {
				if arm.CompareAndSwap(true, false) {
					h.Arm(0)
					go func() { wrote <- s.Add(bLater) }()
					select { // a store that makes the write wait for the read lets this time out
					case <-h.Held():
					case <-time.After(500 * time.Millisecond):
					}
				}
				return mirror.Proof{Entry: []byte("label"), Size: 41, Checkpoint: []byte("checkpoint")}, nil
			}
			var err error
			s, err = peers.Open(peers.Config{Dir: "p", FS: faultfs.Wrap(vfs.NewStrictMem(), h), Self: self.did,
				AllowList: []string{mirrored.did, b.did}, Prove: prove})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			defer h.Release(faultfs.ErrInjected) // a check that failed while the sync was held lets it go, failed
			if err := s.Add(bFirst); err != nil {
				t.Fatal(err)
			}
			if err := s.PutMirrored(mirror.Observation{Observer: mirrored.did, Server: serverID, Endpoint: endpoint,
				Digest: digest("x"), ObservedAt: t0, LabelID: "urn:uuid:mirrored", LeafIndex: 40}); err != nil {
				t.Fatal(err)
			}
			arm.Store(true)
			entryOf(t, s, b.did, digest("x"), "while b's later observation is written")
			release := error(nil)
			if fails {
				release = faultfs.ErrInjected
			}
			h.Release(release)
			if err := <-wrote; fails != (err != nil) {
				t.Fatalf("the write whose sync returned %v: %v", release, err)
			}
			if fails {
				entryOf(t, s, b.did, digest("x"), "after the write failed") // the observation acknowledged
			} else {
				entryOf(t, s, b.did, digest("y"), "after the write")
			}
		})
	}
}

// entryOf checks that the entry of did among the observers of serverID is whole and says
// digest want.
func entryOf(t *testing.T, s *peers.Store, did, want, when string) {
	t.Helper()
	list, err := s.Observers(serverID)
	if err != nil {
		t.Fatalf("%s: %v", when, err)
	}
	for _, o := range list {
		if o.DID != did {
			continue
		}
		if err := whole(o); err != nil {
			t.Fatalf("%s: %v", when, err)
		}
		if o.Digest != want {
			t.Fatalf("%s: the entry says %s, want %q", when, o.Digest, want)
		}
		return
	}
	t.Fatalf("%s: no entry of %s", when, did)
}

// TestCloseWaitsForWrites: Close waits for a write whose sync is under way (closing Pebble
// under it made the write's own read panic), and afterwards the store answers ErrClosed.
func TestCloseWaitsForWrites(t *testing.T) {
	self, a := newObserver(t, 24), newObserver(t, 25)
	first, later := a.observe(t, digest("x"), t0), a.observe(t, digest("y"), t0.Add(time.Hour))
	h := faultfs.NewHold()
	s, err := peers.Open(peers.Config{Dir: "p", FS: faultfs.Wrap(vfs.NewStrictMem(), h), Self: self.did,
		AllowList: []string{a.did}})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Release(faultfs.ErrInjected)
	h.Arm(0)
	wrote, closed := make(chan error, 1), make(chan error, 1)
	go func() { wrote <- s.Add(first) }()
	<-h.Held()
	go func() { closed <- s.Close() }()
	select {
	case err := <-closed:
		t.Fatalf("Close returned %v with a write under way", err)
	case <-time.After(50 * time.Millisecond):
	}
	h.Release(nil)
	if err := <-wrote; err != nil {
		t.Fatalf("the write under way: %v", err)
	}
	if err := <-closed; err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := s.Add(later); !errors.Is(err, peers.ErrClosed) {
		t.Fatalf("Add after Close: %v", err)
	}
	if _, err := s.Observers(serverID); !errors.Is(err, peers.ErrClosed) {
		t.Fatalf("Observers after Close: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("a second Close: %v", err)
	}
}
