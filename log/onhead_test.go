package log

import (
	"testing"
)

// TestOnHead: the hook sees every head once it is durable, in order, and may read the log
// (it runs outside the log's locks): Latest is already the head it was given.
func TestOnHead(t *testing.T) {
	cfg := testConfig(t.TempDir())
	heads := make(chan Head, 16)
	var l *Log
	ready := make(chan struct{})
	cfg.OnHead = func(h Head) {
		<-ready
		if got := l.Latest(); got.Size < h.Size {
			t.Errorf("OnHead(size %d) while Latest is size %d", h.Size, got.Size)
		}
		heads <- h
	}
	l = openTest(t, cfg)
	close(ready)
	for i := range 3 {
		appendN(t, l, i, 1)
	}
	for want := uint64(1); want <= 3; want++ {
		if h := <-heads; h.Size != want || h.Checkpoint == nil || h.STH == nil {
			t.Fatalf("head %d: size %d, checkpoint %q", want, h.Size, h.Checkpoint)
		}
	}
	select {
	case h := <-heads:
		t.Errorf("an extra head of size %d", h.Size)
	default:
	}
}
