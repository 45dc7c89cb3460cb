package node

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/histor-observer/histor/crawl"
	hlog "github.com/histor-observer/histor/log"
)

// TestClockJumps runs three observers over one registry: b's clock runs an hour ahead
// throughout; c's jumps an hour back, then two hours forward. Every crawl's observations
// still reach every view (decided by leaf order, not by the hour their labels name), no
// log's head goes back in size or time, each head is cosigned by the other two witnesses,
// every log passes fsck holding every entry its last head did, and a's /network and
// /api/v1/mirrors show b an hour ahead.
func TestClockJumps(t *testing.T) {
	if testing.Short() {
		t.Skip("three nodes with libp2p hosts and a registry of MCP servers on loopback")
	}
	const n = 12
	fleet := newBenchFleet(t, n)
	nodes := []*benchObserver{newBenchObserver(t, 0), newBenchObserver(t, 1), newBenchObserver(t, 2)}
	offsets := make([]atomic.Int64, len(nodes))
	offsets[1].Store(int64(time.Hour))
	descs := make([]string, len(nodes))
	for i, bn := range nodes {
		descs[i] = bn.descriptorFile(t)
	}
	for i, bn := range nodes {
		var ps []string
		for j := range nodes {
			if j != i {
				ps = append(ps, descs[j])
			}
		}
		now := func() time.Time { return time.Now().Add(time.Duration(offsets[i].Load())) }
		bn.start(t, Config{Peers: ps, Now: now, MirrorPoll: time.Second,
			Crawl: crawl.Config{Registry: fleet.reg, AllowPrivateTargets: true, Now: now}})
	}
	var heads [3]hlog.Head
	round := func(what string, changed ...int) {
		t.Helper()
		for _, i := range changed {
			fleet.change(i)
		}
		for i, bn := range nodes {
			bn.crawl(t)
			h := bn.node.Log().Latest()
			if h.Size <= heads[i].Size || h.Time.Before(heads[i].Time) {
				t.Fatalf("%s: observer %d's head went from %d at %v to %d at %v", what, i, heads[i].Size, heads[i].Time, h.Size, h.Time)
			}
			heads[i] = h
		}
		took := waitFor(t, 30*time.Second, what+": every view lists every observer of every server", func() bool { return viewsComplete(nodes, fleet, n) })
		t.Logf("%s: views complete %v after the last crawl", what, took.Round(time.Millisecond))
		// The witnesses, their nodes' clocks off too, go on cosigning each head as it grows.
		for i, bn := range nodes {
			waitFor(t, 30*time.Second, fmt.Sprintf("%s: observer %d's head of %d cosigned by the other two", what, i, heads[i].Size), func() bool {
				return cosignatures(bn, heads[i].Size) >= len(nodes)-1
			})
		}
	}
	round("start")
	offsets[2].Store(int64(-time.Hour))
	round("c's clock an hour back", 0, 1, 2)
	offsets[2].Store(int64(time.Hour))
	round("c's clock an hour ahead", 3, 4)

	a := nodes[0].node
	waitFor(t, 30*time.Second, "a measures b's clock", func() bool {
		k, ok := a.fed.Gossip().Clocks()[nodes[1].did()]
		return ok && k.Offset > 59*time.Minute && k.Offset < 61*time.Minute
	})
	w := httptest.NewRecorder()
	a.Handler().ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/network", nil))
	if !strings.Contains(w.Body.String(), "1h0m0s ahead of this node") {
		t.Errorf("/network does not show b an hour ahead:\n%.3000s", w.Body.String())
	}
	w = httptest.NewRecorder()
	a.Handler().ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/api/v1/mirrors", nil))
	var list struct {
		Mirrors []struct {
			Observer string `json:"observer"`
			Clock    *struct {
				OffsetMs int64 `json:"offsetMs"`
			} `json:"clock"`
		} `json:"mirrors"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &list); err != nil {
		t.Fatal(err)
	}
	for _, m := range list.Mirrors {
		if m.Observer == nodes[1].did() && (m.Clock == nil || m.Clock.OffsetMs < 3_590_000 || m.Clock.OffsetMs > 3_610_000) {
			t.Errorf("/api/v1/mirrors: b's clock %+v, want about an hour ahead", m.Clock)
		}
	}

	for i, bn := range nodes {
		dir := bn.node.LogDir()
		if err := bn.node.Close(); err != nil {
			t.Fatal(err)
		}
		rep, err := hlog.Fsck(context.Background(), dir, nil)
		if err != nil || len(rep.Problems) > 0 || rep.Size < heads[i].Size {
			t.Errorf("observer %d's log after the jumps (its last head %d): %v %+v", i, heads[i].Size, err, rep)
		}
	}
}
