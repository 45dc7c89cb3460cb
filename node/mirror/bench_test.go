package mirror_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"

	"github.com/cockroachdb/pebble"

	"github.com/histor-observer/histor/node/mirror"
)

// benchServers is how many servers the benchmark's observer log holds:
// HISTOR_BENCH_MIRROR_SERVERS, by default 2,000 (three entries each: an observation label and
// two others, as a first crawl writes).
func benchServers(b *testing.B) int {
	if v := os.Getenv("HISTOR_BENCH_MIRROR_SERVERS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			b.Fatalf("HISTOR_BENCH_MIRROR_SERVERS=%q", v)
		}
		return n
	}
	return 2000
}

// BenchmarkSync mirrors a whole observer log (real signed observation labels, their
// descriptors, two other entries of 2 KB per server) from a source in memory into a Pebble store on
// disk: fetch, check against the signed checkpoint, store with stored hashes, read every
// observation and its descriptor, index. Its baseline, BenchmarkSyncBaselinePebble, writes
// the same entries in the same number of synced Pebble batches and does nothing else.
func BenchmarkSync(b *testing.B) {
	o := benchLog(b)
	size := o.log.Latest().Size
	src := &logSource{"bench", o.log}
	var bytes int
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s, err := mirror.Open(mirror.Config{Dir: b.TempDir()})
		if err != nil {
			b.Fatal(err)
		}
		s.Follow(o.did, "")
		res, err := s.Sync(context.Background(), o.did, src)
		if err != nil || res.Entries != size {
			b.Fatalf("sync: %+v, %v", res, err)
		}
		b.StopTimer()
		s.Close()
		b.StartTimer()
	}
	b.StopTimer()
	entries, _ := o.log.Entries(0, size)
	for _, e := range entries {
		bytes += len(e) + 2
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(size), "ns/entry")
	b.ReportMetric(float64(bytes)/float64(size), "bytes/entry")
	b.ReportMetric(float64(size), "entries")
}

func BenchmarkSyncBaselinePebble(b *testing.B) {
	o := benchLog(b)
	size := o.log.Latest().Size
	entries, err := o.log.Entries(0, size)
	if err != nil {
		b.Fatal(err)
	}
	const perBatch = 4 * 256 // the mirror's default window
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		db, err := pebble.Open(b.TempDir(), &pebble.Options{})
		if err != nil {
			b.Fatal(err)
		}
		batch := db.NewBatch()
		for j, e := range entries {
			batch.Set([]byte(fmt.Sprintf("e/%016x", j)), e, nil)
			if (j+1)%perBatch == 0 || j == len(entries)-1 {
				if err := batch.Commit(pebble.Sync); err != nil {
					b.Fatal(err)
				}
				batch = db.NewBatch()
			}
		}
		b.StopTimer()
		db.Close()
		b.StartTimer()
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(size), "ns/entry")
}

func benchLog(b *testing.B) *observer {
	b.Helper()
	o := newObserver(b, "bench")
	o.padBytes = 2000 // a scan or name-threat label is about 2 KB
	for i := range benchServers(b) {
		o.observe(fmt.Sprintf("io.bench/server-%d", i), fmt.Sprintf("https://s%d.bench.example/mcp", i), "tools of "+strconv.Itoa(i), 2)
	}
	return o
}
