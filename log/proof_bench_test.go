package log_test

import (
	"context"
	"crypto/ed25519"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/histor-observer/histor/log"
	"github.com/histor-observer/histor/log/logtest"
)

// benchLogVersion names the cached 1M-leaf log; change it when the stored
// format changes so a stale cache is never used.
const benchLogVersion = "v3"

func benchConfig() log.Config {
	seed := make([]byte, 32)
	for i := range seed {
		seed[i] = byte(i)
	}
	return log.Config{
		Origin: "histor.test/log",
		Key:    ed25519.NewKeyFromSeed(seed),
		DID:    "did:key:z6MkehRgf7yJbgaGfYsdoAsKdBPE3dj2CYhowQdcjqSJgvVd",
	}
}

// openMillion opens a 1,000,000-leaf log, built once and kept under the
// system temp directory (building takes tens of seconds).
func openMillion(b *testing.B) *log.Log {
	const n = 1_000_000
	dir := filepath.Join(os.TempDir(), "histor-log-bench-1m-"+benchLogVersion)
	cfg := benchConfig()
	cfg.Dir = dir
	if l, err := log.Open(context.Background(), cfg); err == nil && l.Size() == n {
		return l
	} else if err == nil {
		l.Close()
	}
	os.RemoveAll(dir)
	start := time.Now()
	l := logtest.Build(b, dir, n, cfg)
	b.Logf("built a %d-leaf log in %v", n, time.Since(start))
	return l
}

// BenchmarkInclusionProof1M: inclusion proofs for random leaves of a
// 1,000,000-leaf log, from the store (no HTTP).
func BenchmarkInclusionProof1M(b *testing.B) {
	l := openMillion(b)
	defer l.Close()
	size := l.Size()
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		rng := rand.New(rand.NewPCG(rand.Uint64(), 1))
		for pb.Next() {
			if _, err := l.InclusionProof(rng.Uint64N(size), size); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "proofs/s")
}

// BenchmarkConsistencyProof1M: consistency proofs from random older sizes.
func BenchmarkConsistencyProof1M(b *testing.B) {
	l := openMillion(b)
	defer l.Close()
	size := l.Size()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		rng := rand.New(rand.NewPCG(rand.Uint64(), 2))
		for pb.Next() {
			if _, err := l.ConsistencyProof(1+rng.Uint64N(size-1), size); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkOpen1M: Open of a 1,000,000-leaf log, start-up checks included
// (every tile against its parent, the label id filter).
func BenchmarkOpen1M(b *testing.B) {
	openMillion(b).Close()
	cfg := benchConfig()
	cfg.Dir = filepath.Join(os.TempDir(), "histor-log-bench-1m-"+benchLogVersion)
	b.ResetTimer()
	for b.Loop() {
		l, err := log.Open(context.Background(), cfg)
		if err != nil {
			b.Fatal(err)
		}
		l.Close()
	}
}
