package observer

import (
	"testing"

	"github.com/histor-observer/histor/sandbox"
)

// TestTighterLimits: a job's limits only ever tighten the observer's.
func TestTighterLimits(t *testing.T) {
	base := sandbox.DefaultLimits()
	for _, tc := range []struct {
		name string
		job  *sandbox.Limits
		want func(*sandbox.Limits)
	}{
		{"none", nil, func(*sandbox.Limits) {}},
		{"zero members keep the observer's", &sandbox.Limits{}, func(*sandbox.Limits) {}},
		{"less", &sandbox.Limits{MemoryBytes: 128 << 20, CPUs: 0.5, TmpBytes: 1 << 20, Pids: 16, InstallSeconds: 60, RunSeconds: 30, CallSeconds: 2, Calls: 3},
			func(l *sandbox.Limits) {
				l.MemoryBytes, l.CPUs, l.TmpBytes, l.Pids = 128<<20, 0.5, 1<<20, 16
				l.InstallSeconds, l.RunSeconds, l.CallSeconds, l.Calls = 60, 30, 2, 3
			}},
		{"more is refused", &sandbox.Limits{MemoryBytes: 8 << 30, CPUs: 8, RunSeconds: 9999, Calls: 100}, func(*sandbox.Limits) {}},
		{"read-write root cannot be asked for", &sandbox.Limits{ReadOnlyRoot: false}, func(*sandbox.Limits) {}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := base
			tc.want(&want)
			if got := tighter(base, tc.job); got != want {
				t.Errorf("got %+v, want %+v", got, want)
			}
		})
	}
}
