package crawl

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/histor-observer/histor/crawl/registry"
	"github.com/histor-observer/histor/log/mtl"
)

// TestSchedulerHoldsPerHostBound runs many workers over targets on a few
// hosts and checks that no host ever had more than perHost slots taken,
// that SSE targets take two, and that every target is handed out once.
func TestSchedulerHoldsPerHostBound(t *testing.T) {
	var targets []registry.Target
	for i := range 300 {
		tr := registry.TransportStreamable
		if i%7 == 0 {
			tr = registry.TransportSSE
		}
		targets = append(targets, registry.Target{ID: fmt.Sprint(i), Transport: tr,
			Endpoint: fmt.Sprintf("https://H%d.example/mcp/%d", i%5, i)})
	}
	s := newScheduler(targets, 2)
	var mu sync.Mutex
	inUse := map[string]int{}
	seen := map[string]bool{}
	var worst atomic.Int32
	var wg sync.WaitGroup
	for range 32 {
		wg.Go(func() {
			for {
				tg, release, ok := s.take(context.Background())
				if !ok {
					return
				}
				h, w := hostOf(tg.Endpoint), s.weight(tg)
				mu.Lock()
				inUse[h] += w
				if n := int32(inUse[h]); n > worst.Load() {
					worst.Store(n)
				}
				if seen[tg.ID] {
					t.Errorf("target %s handed out twice", tg.ID)
				}
				seen[tg.ID] = true
				mu.Unlock()
				time.Sleep(200 * time.Microsecond)
				mu.Lock()
				inUse[h] -= w
				mu.Unlock()
				release()
			}
		})
	}
	wg.Wait()
	if worst.Load() > 2 {
		t.Errorf("a host had %d slots taken at once", worst.Load())
	}
	if len(seen) != len(targets) {
		t.Errorf("%d of %d targets handed out", len(seen), len(targets))
	}
}

func TestSchedulerStopsOnCancel(t *testing.T) {
	s := newScheduler([]registry.Target{{Endpoint: "https://a.example/1"}, {Endpoint: "https://a.example/2"},
		{Endpoint: "https://a.example/3"}}, 2)
	_, r1, _ := s.take(context.Background())
	_, _, _ = s.take(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, _, ok := s.take(ctx); ok {
		t.Fatal("a third slot on one host was handed out")
	}
	r1()
	if _, _, ok := s.take(context.Background()); !ok {
		t.Fatal("a released slot was not handed out again")
	}
}

func TestProgressPlainAndTerminal(t *testing.T) {
	var plain bytes.Buffer
	p := NewProgress(&plain, false, time.Hour)
	p.start(3)
	for _, st := range []string{"ok", "timeout", "ok"} {
		p.step(st)
	}
	p.finish()
	if got := plain.String(); got != "crawl: 3/3 targets (100%), 2 ok, 0s\n" || strings.Contains(got, "\r") {
		t.Errorf("plain progress %q", got)
	}
	var tty bytes.Buffer
	p = NewProgress(&tty, true, 0)
	p.start(2)
	p.step("ok")
	p.step("ok")
	p.finish()
	if got := tty.String(); !strings.HasPrefix(got, "\r[") || !strings.Contains(got, "100% 2/2 targets") || !strings.HasSuffix(got, "\n") {
		t.Errorf("terminal progress %q", got)
	}
	var nilp *Progress
	nilp.start(1)
	nilp.step("ok") // a nil Progress shows nothing and does not panic
}

// TestFallbackNamesInUTF16Order: the names-only descriptor of a refused
// set sorts its names as MTL/1 does, by UTF-16 code units: U+1F600 (a
// surrogate pair, 0xD83D…) before U+FF21, though after it in code points.
func TestFallbackNamesInUTF16Order(t *testing.T) {
	tools := []any{
		map[string]any{"name": "\uFF21"}, map[string]any{"name": "\U0001F600"},
		map[string]any{"name": "a"}, map[string]any{"name": "a"},
	}
	d, err := fallbackDescriptor(mtl.Server{Name: "io.example/n", Registry: "urn:awr:mtl:1:registry:r.example"}, mtl.Artifact{}, tools)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"a", "\U0001F600", "\uFF21"}; !slices.Equal(d.ToolSet.Names, want) {
		t.Errorf("names %q, want %q", d.ToolSet.Names, want)
	}
}

func TestHostOfSharesIDNAForms(t *testing.T) {
	if a, b := hostOf("https://Bücher.example/mcp"), hostOf("https://xn--bcher-kva.example/other"); a != b || a != "xn--bcher-kva.example" {
		t.Errorf("host keys %q and %q, want both xn--bcher-kva.example", a, b)
	}
	if hostOf("https://a.example:8443/x") != "a.example" {
		t.Error("the port must not split a host's slots")
	}
}

// TestHostOfTrailingDot: the guard bounds "a.example." and "a.example" as one
// host, so the scheduler must too, or two SSE observations could each hold
// one of the host's two connections with their streams and wait for ever
// for a second one to post on.
func TestHostOfTrailingDot(t *testing.T) {
	if a, b := hostOf("https://a.example./sse"), hostOf("https://A.example/sse"); a != b {
		t.Errorf("host keys %q and %q differ", a, b)
	}
}

// TestSchedulerSharesGuardSpellings: two SSE targets on two spellings of
// one host the guard bounds as one ("bü_cher.example", which IDNA lookup
// with STD3 rules refuses, and its xn-- form) share its two slots, so the
// second is not handed out while the first holds both; otherwise each
// would hold one of the guard's two connections and wait for the other.
func TestSchedulerSharesGuardSpellings(t *testing.T) {
	if a, b := hostOf("https://bü_cher.example/sse"), hostOf("https://XN--B_CHER-3YA.example./sse"); a != b || a != "xn--b_cher-3ya.example" {
		t.Fatalf("host keys %q and %q, want both xn--b_cher-3ya.example", a, b)
	}
	s := newScheduler([]registry.Target{
		{ID: "1", Endpoint: "https://bü_cher.example/sse", Transport: registry.TransportSSE},
		{ID: "2", Endpoint: "https://xn--b_cher-3ya.example/sse", Transport: registry.TransportSSE},
	}, 2)
	_, release, ok := s.take(context.Background())
	if !ok {
		t.Fatal("no first target")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, _, ok := s.take(ctx); ok {
		t.Fatal("the second spelling was handed out while the first held the host's two slots")
	}
	release()
	if _, _, ok := s.take(context.Background()); !ok {
		t.Error("the second target was not handed out once the first was released")
	}
}
