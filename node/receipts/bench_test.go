package receipts

import (
	"encoding/json"
	"github.com/histor-observer/histor/node/receipts/receiptstest"
	"net/http"
	"testing"
	"time"
)

// BenchmarkAnchorSubmit posts batches of MaxAnchorBatch fresh anchors over
// loopback HTTP, each batch checked, logged and durable under a new head
// before its answer.
func BenchmarkAnchorSubmit(b *testing.B) {
	rn := &receiptsNode{t: b, dir: b.TempDir(), hub: receiptstest.Key("hub"), key: receiptstest.Key("log")}
	rn.open([]string{receiptstest.DID(rn.hub)})
	defer rn.close()
	// Anchors must fall in the log's window, whose clock is fixedNow.
	at := fixedNow().Add(-time.Minute)
	n := 0
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		batch := make([]json.RawMessage, MaxAnchorBatch)
		for j := range batch {
			batch[j] = receiptstest.Anchor(b, rn.hub, receiptstest.Digest(n), at)
			n++
		}
		body := receiptstest.Body(batch...)
		b.StartTimer()
		if status, ans := rn.do(http.MethodPost, "/api/v1/receipts/anchors", body); status != 200 {
			b.Fatalf("%d %s", status, ans)
		}
	}
	b.ReportMetric(float64(b.N*MaxAnchorBatch)/b.Elapsed().Seconds(), "anchors/s")
}
