package node

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/mmcdole/gofeed"

	"github.com/histor-observer/histor/log/awr"
	"github.com/histor-observer/histor/node/events"
	"github.com/histor-observer/histor/node/notify"
)

// TestSecurityEventsOfAFederation: in the populated world, observer a
// records a signed split-view event (a and b hold different digests of the
// two-faced server, both open at once) and a signed equivocation event
// (the forked log's evidence bundle), serves both at
// /api/v1/security-events and /security-feed.xml, and delivers them (and
// the change's definitions event) to its webhook receiver with a valid HMAC.
func TestSecurityEventsOfAFederation(t *testing.T) {
	if testing.Short() {
		t.Skip("runs two observers with libp2p on loopback, crawls real MCP servers and forks a log; skipped under -short")
	}
	w := newWorld(t)
	byKind := awaitEvents(t, w, events.KindDefinitions, events.KindSplitView, events.KindEquivocation)

	t.Run("split view", func(t *testing.T) {
		ev := byKind[events.KindSplitView]
		checkSplitEvent(t, w, ev)
		var page notify.EventsPage
		getInto(t, w.a, "/api/v1/security-events?watch="+w.twoFaced.id(), &page)
		if len(page.Events) != 1 || !strings.Contains(string(page.Events[0].Event), `"kind":"split-view"`) {
			t.Errorf("watching the two-faced server: %+v", page)
		}
	})
	t.Run("equivocation", func(t *testing.T) {
		ev := byKind[events.KindEquivocation]
		e := ev["evidence"].(map[string]any)
		if ev["target"] != w.forkedLog.origin || e["origin"] != w.forkedLog.origin {
			t.Errorf("equivocation event about %v (evidence %v), want %s", ev["target"], e, w.forkedLog.origin)
		}
		status, bundle := w.a.get(t, e["url"].(string))
		if status != 200 || sha256Hex(bundle) != e["bundleSha256"] {
			t.Errorf("%v: %d, digest %s, the event says %v", e["url"], status, sha256Hex(bundle), e["bundleSha256"])
		}
	})
	t.Run("webhook", func(t *testing.T) {
		for kind, ev := range byKind {
			eventually(t, kind+" event delivered to the webhook receiver", func() error {
				for _, d := range w.hooks.deliveries() {
					if d.id == ev["id"] {
						verifyHookEvent(t, w.a.node, d)
						return nil
					}
				}
				return fmt.Errorf("%d deliveries, none of event %v", len(w.hooks.deliveries()), ev["id"])
			})
		}
	})
	t.Run("feed", func(t *testing.T) {
		_, body := w.a.get(t, "/security-feed.xml")
		feed, err := gofeed.NewParser().ParseString(string(body))
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]bool{
			w.twoFaced.id() + ": observers saw different tool definitions": false,
			w.forkedLog.origin + ": two log heads that cannot be one tree": false,
			weatherName + ": tool definitions changed":                     false,
		}
		for _, it := range feed.Items {
			if _, ok := want[it.Title]; ok {
				want[it.Title] = true
			}
		}
		for title, seen := range want {
			if !seen {
				t.Errorf("/security-feed.xml has no entry %q:\n%s", title, body)
			}
		}
	})
}

// checkSplitEvent: the event names both observers with the digests each
// saw, two of them, and the agreement split.
func checkSplitEvent(t *testing.T, w *world, ev map[string]any) {
	t.Helper()
	e := ev["evidence"].(map[string]any)
	if ev["target"] != w.twoFaced.id() || e["agreement"] != "split" || e["endpoint"] != w.twoFaced.endpoint {
		t.Errorf("split-view event %v", ev)
	}
	digests := map[string]string{}
	for _, o := range e["observers"].([]any) {
		o := o.(map[string]any)
		d, _ := o["digest"].(string)
		digests[o["did"].(string)] = d
	}
	da, db := digests[w.a.did()], digests[w.b.did()]
	if len(digests) != 2 || da == "" || db == "" || da == db {
		t.Errorf("split-view observers %v: want a (%s) and b (%s) with two different digests", digests, w.a.did(), w.b.did())
	}
}

// awaitEvents waits until observer a of w serves an event of every kind,
// each signed by its log key, and returns the first of each kind. A
// split-view event counts only when it is of the two-faced server: the
// weather server's change is a split too, for the moment between a's crawl
// that saw it and b's.
func awaitEvents(t *testing.T, w *world, kinds ...string) map[string]map[string]any {
	t.Helper()
	fn := w.a
	pub, err := awr.ParseDIDKey(fn.node.DID())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]any{}
	eventually(t, "events of every kind", func() error {
		var page notify.EventsPage
		getInto(t, fn, "/api/v1/security-events?limit=200", &page)
		for _, it := range page.Events {
			ev, err := events.Verify(it.Event, ed25519.PublicKey(pub))
			if err != nil {
				t.Fatalf("event %d: %v", it.Cursor, err)
			}
			k := ev["kind"].(string)
			if k == events.KindSplitView && ev["target"] != w.twoFaced.id() {
				continue
			}
			if out[k] == nil {
				out[k] = ev
			}
		}
		for _, k := range kinds {
			if out[k] == nil {
				return fmt.Errorf("no %s event among %d", k, len(page.Events))
			}
		}
		return nil
	})
	return out
}

func getInto(t *testing.T, fn *fedNode, path string, v any) {
	t.Helper()
	status, body := fn.get(t, path)
	if status != 200 {
		t.Fatalf("GET %s: %d %s", path, status, body)
	}
	if err := json.Unmarshal(body, v); err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
}

// sha256Hex is the lowercase hex SHA-256 of b, as an event names its bundle.
func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}
