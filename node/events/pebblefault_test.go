package events

import (
	"bytes"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/vfs"

	"github.com/histor-observer/histor/internal/faultfs"
	"github.com/histor-observer/histor/internal/faultfs/faulttest"
	"github.com/histor-observer/histor/internal/pebbledb"
)

// TestPebbleFaults appends events and keeps webhook deliveries' records on the event store's
// real Pebble over a disk that fails: each write, sync, create, rename, remove and close
// after Open in turn, once and from then on, and a disk that fills (faulttest.Run). After
// each: the append or record that met the fault fails with it, the store stops (Stopped)
// and refuses later writes at once, and after a crash it reopens with every acknowledged
// event at its cursor, no cursor skipped, every event verifying, each target's index whole,
// and appends again at the next cursor.
func TestPebbleFaults(t *testing.T) {
	sg, pub := newSigner(t)
	targets := []string{"aaaaaaaaaaaaaaaa", "bbbbbbbbbbbbbbbb", "example.com/log", "aaaaaaaaaaaaaaaa", "cccccccccccccccc"}
	kinds := []string{KindDefinitions, KindSplitView, KindEquivocation, KindDefinitions, KindSplitView}
	type ev struct {
		doc        []byte
		id, target string
	}
	var evs []ev
	for i, tg := range targets {
		doc, id := sign(t, sg, tg, kinds[i], i)
		evs = append(evs, ev{doc, id, tg})
	}
	appendStep := func(e ev, writes bool) faulttest.Step[*Store] {
		return faulttest.Step[*Store]{Name: "append " + e.id[:8], Writes: writes, Do: func(s *Store) error {
			_, fresh, err := s.Append(e.doc, e.id, e.target)
			if err == nil && fresh != writes {
				return fmt.Errorf("append %s: fresh %v", e.id[:8], fresh)
			}
			return err
		}}
	}
	meta := func(name string, v any) faulttest.Step[*Store] {
		return faulttest.Step[*Store]{Name: "set " + name, Writes: true, Do: func(s *Store) error { return s.SetMeta(name, v) }}
	}
	again, _ := sign(t, sg, "dddddddddddddddd", KindDefinitions, 99)
	// fills are the events the flush case appends, signed as it asks for them.
	var fills []ev
	fill := func(i int) ev {
		for len(fills) <= i {
			tg := fmt.Sprintf("%016x", len(fills)%64)
			doc, id := sign(t, sg, tg, KindDefinitions, 1000+len(fills))
			fills = append(fills, ev{doc, id, tg})
		}
		return fills[i]
	}
	faulttest.Run(t, faulttest.Scenario[*Store]{
		Dir:  "events",
		Open: func(fsys vfs.FS) (*Store, error) { return OpenFS(fsys, "events", nil) },
		Steps: []faulttest.Step[*Store]{
			appendStep(evs[0], true),
			appendStep(evs[1], true),
			meta("derive/change-cursor", 1),
			appendStep(evs[0], false), // the same event again keeps its cursor
			meta("webhook/h1/state", map[string]any{"cursor": 2, "failures": 0}),
			appendStep(evs[2], true),
			meta("webhook/h1/log/1", map[string]any{"seq": 1, "status": 200}),
			appendStep(evs[3], true),
			{Name: "delete webhook/h1/log/1", Writes: true, Do: func(s *Store) error { return s.DeleteMeta("webhook/h1/log/1") }},
			appendStep(evs[4], true),
			meta("webhook/h1/state", map[string]any{"cursor": 5, "failures": 0}),
		},
		Dump:              func(s *Store) (string, error) { return dumpEvents(s, pub, targets) },
		StoppedShowsAcked: true,
		Again: func(s *Store) error {
			c, fresh, err := s.Append(again, "again", "dddddddddddddddd")
			if err == nil && (!fresh || c != s.Last()) {
				return fmt.Errorf("appended at cursor %d (fresh %v), last %d", c, fresh, s.Last())
			}
			return err
		},
		Fill: func(s *Store, i int) error {
			e := fill(i)
			_, _, err := s.Append(e.doc, e.id, e.target)
			return err
		},
		// The fills are the only events, fill i at cursor i+1.
		Filled: func(s *Store, i int) (bool, error) {
			items, err := s.Page(uint64(i), 1, nil)
			return err == nil && len(items) == 1 && items[0].Cursor == uint64(i+1) && bytes.Equal(items[0].Event, fill(i).doc), err
		},
	})
}

// dumpEvents is everything the event store's readers read: the last cursor, every event in
// cursor order (verified, and each cursor the one after the last), each target's page, the
// newest first, and every meta record.
func dumpEvents(s *Store, pub ed25519.PublicKey, targets []string) (string, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "last %d\n", s.Last())
	all, err := s.Page(0, MaxLimit, nil)
	if err != nil {
		return "", err
	}
	for i, it := range all {
		if it.Cursor != uint64(i+1) {
			return "", fmt.Errorf("event %d holds cursor %d", i+1, it.Cursor)
		}
		if _, err := Verify(it.Event, pub); err != nil {
			return "", fmt.Errorf("event %d: %w", it.Cursor, err)
		}
		fmt.Fprintf(&b, "event %d %s\n", it.Cursor, it.Event)
	}
	if n := len(all); n > 0 && all[n-1].Cursor != s.Last() {
		return "", fmt.Errorf("the last event is %d, the last cursor %d", all[n-1].Cursor, s.Last())
	}
	for _, tg := range targets {
		page, err := s.Page(0, MaxLimit, []string{tg})
		if err != nil {
			return "", err
		}
		fmt.Fprintf(&b, "target %s:", tg)
		for _, it := range page {
			fmt.Fprintf(&b, " %d", it.Cursor)
		}
		b.WriteString("\n")
	}
	newest, err := s.Newest(MaxLimit, nil)
	if err != nil {
		return "", err
	}
	for _, it := range newest {
		fmt.Fprintf(&b, "newest %d\n", it.Cursor)
	}
	err = s.EachMeta("", func(name string, v []byte) error {
		if !json.Valid(v) {
			return fmt.Errorf("meta %s is not JSON: %q", name, v)
		}
		fmt.Fprintf(&b, "meta %s %s\n", name, v)
		return nil
	})
	return b.String(), err
}

// TestAppendAgainAfterFailedSync: an event whose WAL sync failed is visible to Pebble's reads
// but not durable. Appending it again must be refused, not answered as already recorded: a
// crash then loses it, though Append said it was durable. No page shows it either.
func TestAppendAgainAfterFailedSync(t *testing.T) {
	defer func(wait time.Duration) { pebbledb.FatalCloseWait = wait }(pebbledb.FatalCloseWait)
	pebbledb.FatalCloseWait = 200 * time.Millisecond
	mem, sw := vfs.NewStrictMem(), &faultfs.Switch{}
	s, err := OpenFS(faultfs.Wrap(mem, sw), "events", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	sg, _ := newSigner(t)
	doc, id := sign(t, sg, "aaaaaaaaaaaaaaaa", KindDefinitions, 1)
	sw.Arm(&faultfs.Plan{Kinds: []faultfs.Op{faultfs.Sync}, At: 1})
	if _, _, err := s.Append(doc, id, "aaaaaaaaaaaaaaaa"); !faultfs.IsFault(err) {
		t.Fatalf("an append whose sync failed: %v", err)
	}
	c, fresh, err := s.Append(doc, id, "aaaaaaaaaaaaaaaa")
	var se *pebbledb.StoppedError
	if !errors.As(err, &se) || !faultfs.IsFault(err) {
		t.Errorf("the same event again: cursor %d, fresh %v, %v; want a *pebbledb.StoppedError naming the fault", c, fresh, err)
	}
	// Nor may a reader see it: a subscriber that took cursor 1 for it would, once a restart
	// lost it, skip the event that takes cursor 1 next.
	page, err := s.Page(0, MaxLimit, nil)
	newest, nerr := s.Newest(MaxLimit, nil)
	watched, werr := s.Page(0, MaxLimit, []string{"aaaaaaaaaaaaaaaa"})
	if err != nil || nerr != nil || werr != nil || len(page)+len(newest)+len(watched) > 0 {
		t.Errorf("a stopped store, last cursor %d, shows the event that failed: page %d, newest %d, watched %d events (%v %v %v)",
			s.Last(), len(page), len(newest), len(watched), err, nerr, werr)
	}
	mem.ResetToSyncedState()
	disk := vfs.NewStrictMem()
	if _, err := vfs.Clone(mem, disk, "events", "events"); err != nil {
		t.Fatal(err)
	}
	after, err := OpenFS(disk, "events", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer after.Close()
	if se == nil && after.Last() == 0 {
		t.Errorf("after a crash the store holds no event: the one answered as recorded at cursor %d is lost", c)
	}
}
