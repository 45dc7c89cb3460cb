package node

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/histor-observer/histor/crawl"
	"github.com/histor-observer/histor/crawl/registry/registrytest"
	"github.com/histor-observer/histor/sandbox/queue"
)

// TestLocalWorkerTakesJobs: a node with LocalWorkers runs its own worker (NewSandboxWorker,
// as `histor sandbox worker` does) over the embedded queue on loopback; a package the crawl
// found reaches its Observe as a job, and Close stops it.
func TestLocalWorkerTakesJobs(t *testing.T) {
	reg := registrytest.Server(t, []registrytest.Entry{
		{Name: "io.example/tiny", Packages: []registrytest.Package{{RegistryType: "npm", Identifier: "tiny-weather", Version: "1.0.0"}}},
	})
	var mu sync.Mutex
	var seen []string
	observe := func(_ context.Context, job queue.Job) (queue.Result, error) {
		mu.Lock()
		seen = append(seen, job.Target)
		mu.Unlock()
		// Goes back to the queue: this test is about who takes jobs, not what they hold.
		return queue.Result{}, errors.New("not observed in this test")
	}
	n, err := New(Config{DataDir: t.TempDir(), Logger: slog.New(slog.DiscardHandler),
		Crawl:   crawl.Config{Registry: reg.URL, AllowPrivateTargets: true},
		Sandbox: SandboxConfig{Enabled: true, LocalWorkers: 1, Observe: observe}})
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	if n.sbx.Load().LocalWorker() == nil {
		t.Fatal("no local worker started")
	}
	if started, _ := n.crawls.Start(); !started {
		t.Fatal("no crawl started")
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		mu.Lock()
		got := append([]string(nil), seen...)
		mu.Unlock()
		if len(got) > 0 {
			if got[0] != "npm:tiny-weather@1.0.0" {
				t.Errorf("the local worker observed %q, want npm:tiny-weather@1.0.0", got[0])
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the local worker took no job in 30 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := n.Close(); err != nil {
		t.Errorf("closing the node with its local worker: %v", err)
	}
}
