package log

import (
	"context"
	"encoding/binary"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/histor-observer/histor/internal/pebbledb"
)

// benchLabel is a 1 KiB label with a unique id.
func benchLabel(i uint64) Entry {
	id := fmt.Sprintf("urn:uuid:00000000-0000-4000-8000-%012x", i)
	head := fmt.Sprintf(`{"id":%q,"pad":"`, id)
	label := make([]byte, 0, 1024)
	label = append(label, head...)
	for len(label) < 1024-2 {
		label = append(label, 'x')
	}
	return Entry{ID: id, Label: append(label, `"}`...)}
}

// appendCallers is how many goroutines call Append at once in the append
// benchmark: enough to fill MaxBatch while the previous batch syncs.
const appendCallers = 2048

// BenchmarkAppend1KiB: durable appends of 1 KiB labels from concurrent
// callers, each call carrying the four labels of one observation (one per
// MTL/1 method), as a crawler appends them.
func BenchmarkAppend1KiB(b *testing.B) { benchAppend(b, 4) }

// BenchmarkAppend1KiBSingle: the same with one label per call.
func BenchmarkAppend1KiBSingle(b *testing.B) { benchAppend(b, 1) }

func benchAppend(b *testing.B, perCall int) {
	cfg := testConfig(b.TempDir())
	cfg.CacheBytes = 0 // the default, as a node runs
	l := openTest(b, cfg)
	var next atomic.Uint64
	b.SetBytes(1024)
	b.SetParallelism(appendCallers / perCall / max(1, testingGOMAXPROCS()))
	seq0 := l.latestSeq()
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		entries := make([]Entry, 0, perCall)
		for pb.Next() {
			entries = append(entries, benchLabel(next.Add(1)))
			if len(entries) < perCall {
				continue
			}
			if _, err := l.Append(context.Background(), entries, nil); err != nil {
				b.Error(err)
				return
			}
			entries = entries[:0]
		}
		if len(entries) > 0 {
			if _, err := l.Append(context.Background(), entries, nil); err != nil {
				b.Error(err)
			}
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "labels/s")
	b.ReportMetric(float64(b.N)/float64(l.latestSeq()-seq0), "labels/batch")
}

// BenchmarkRawPebbleSyncedBatch is the baseline: the same 1 KiB entries in
// batches of the log's default MaxBatch, each one Commit(pebble.Sync), with
// the same Pebble options and nothing else (no index, tiles or heads).
func BenchmarkRawPebbleSyncedBatch(b *testing.B) {
	cache := pebble.NewCache(defaultCacheBytes)
	defer cache.Unref()
	db, err := pebble.Open(b.TempDir(), pebbleOptions(cache, pebbledb.Logger{}, false))
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	b.SetBytes(1024)
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; {
		batch := db.NewBatch()
		for j := 0; j < defaultMaxBatch && i < b.N; j, i = j+1, i+1 {
			e := benchLabel(uint64(i))
			_ = batch.Set(binary.BigEndian.AppendUint64([]byte{'e'}, uint64(i)), e.Label, nil)
		}
		if err := batch.Commit(pebble.Sync); err != nil {
			b.Fatal(err)
		}
		batch.Close()
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "labels/s")
}

// Each round of BenchmarkAppendMetrics: metricsCallers goroutines, each
// making metricsCalls appends of the four labels of one observation.
const (
	metricsCallers = 512
	metricsCalls   = 4
	metricsRound   = metricsCallers * metricsCalls * 4
)

// BenchmarkAppendMetrics: durable appends of 1 KiB labels to two logs in
// one process, one registering its metrics and one not, in alternating
// rounds (the order flips every iteration, so drift in the disk or the
// machine falls on both); reports each one's labels/s and on/off, the
// throughput with metrics over the throughput without. Run with -benchtime
// as a count of rounds, e.g. -benchtime=20x.
func BenchmarkAppendMetrics(b *testing.B) {
	logs := [2]*Log{}
	for i, reg := range []prometheus.Registerer{nil, prometheus.NewRegistry()} {
		cfg := testConfig(b.TempDir())
		cfg.CacheBytes, cfg.Registerer = 0, reg
		logs[i] = openTest(b, cfg)
	}
	var next atomic.Uint64
	var took [2]time.Duration
	rounds := 0
	for b.Loop() {
		for k := range 2 {
			i := (k + rounds) % 2
			took[i] += appendRound(b, logs[i], &next)
		}
		rounds++
	}
	n := float64(rounds * metricsRound)
	b.ReportMetric(n/took[0].Seconds(), "labels/s-off")
	b.ReportMetric(n/took[1].Seconds(), "labels/s-on")
	b.ReportMetric(took[0].Seconds()/took[1].Seconds(), "on/off")
}

func appendRound(b *testing.B, l *Log, next *atomic.Uint64) time.Duration {
	start := time.Now()
	var wg sync.WaitGroup
	for range metricsCallers {
		wg.Go(func() {
			for range metricsCalls {
				entries := make([]Entry, 4)
				for j := range entries {
					entries[j] = benchLabel(next.Add(1))
				}
				if _, err := l.Append(context.Background(), entries, nil); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	return time.Since(start)
}

// BenchmarkMetricsPerBatch is what the metrics add to one full synced batch
// (defaultMaxBatch entries from callers of four each, as the crawl appends):
// the updates the sequencer makes for it, timed alone, beside a raw
// Pebble synced batch of the same bytes in the same run (the floor under
// any batch). Their ratio bounds the throughput metrics can cost, without
// the fsync noise that swamps an end-to-end comparison.
func BenchmarkMetricsPerBatch(b *testing.B) {
	l := openTest(b, testConfig(b.TempDir()))
	m, err := newMetrics(prometheus.NewRegistry(), l)
	if err != nil {
		b.Fatal(err)
	}
	reqs := make([]*appendReq, defaultMaxBatch/4)
	for i := range reqs {
		reqs[i] = &appendReq{entries: make([]Entry, 4)}
	}
	b.Run("metrics", func(b *testing.B) {
		for b.Loop() {
			m.synced(defaultMaxBatch, time.Millisecond)
			m.answered(reqs, nil, 1<<20)
		}
	})
	b.Run("raw-pebble-batch", func(b *testing.B) {
		cache := pebble.NewCache(defaultCacheBytes)
		defer cache.Unref()
		db, err := pebble.Open(b.TempDir(), pebbleOptions(cache, pebbledb.Logger{}, false))
		if err != nil {
			b.Fatal(err)
		}
		defer db.Close()
		n := uint64(0)
		for b.Loop() {
			batch := db.NewBatch()
			for range defaultMaxBatch {
				n++
				_ = batch.Set(binary.BigEndian.AppendUint64([]byte{'e'}, n), benchLabel(n).Label, nil)
			}
			if err := batch.Commit(pebble.Sync); err != nil {
				b.Fatal(err)
			}
			batch.Close()
		}
	})
}
