package witness_test

import (
	"bytes"
	"testing"

	"github.com/histor-observer/histor/witness"
)

// FuzzParseRequest: whatever the body parser accepts re-encodes to the same bytes, so one
// request has one spelling; nothing it is given makes it panic.
func FuzzParseRequest(f *testing.F) {
	l := newTestLog(f, "example.test/log")
	f.Add(l.request(f, 0, 3))
	f.Add(l.request(f, 3, 17))
	f.Add([]byte("old 0\n\nx"))
	f.Add([]byte("old 18446744073709551615\nAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n\nx\n"))
	f.Add([]byte("old 1\n\n"))
	f.Fuzz(func(t *testing.T, body []byte) {
		r, err := witness.ParseRequest(body)
		if err != nil {
			return
		}
		if !bytes.Equal(r.Marshal(), body) {
			t.Fatalf("accepted %q, which re-encodes as %q", body, r.Marshal())
		}
		if len(r.Proof) > witness.MaxProofLines || len(r.Checkpoint) == 0 {
			t.Fatalf("accepted %d proof lines, %d checkpoint bytes", len(r.Proof), len(r.Checkpoint))
		}
	})
}

// FuzzAddCheckpoint feeds arbitrary bodies to a witness holding a state: none is cosigned
// unless it is a real extension signed by the log, and the state never goes back.
func FuzzAddCheckpoint(f *testing.F) {
	l := newTestLog(f, "example.test/log")
	tw := newWitness(f, l)
	tw.mustCosign(f, l.request(f, 0, 5))
	f.Add(l.request(f, 5, 9))
	f.Add(l.request(f, 0, 5))
	f.Add(l.fork().request(f, 5, 9))
	f.Fuzz(func(t *testing.T, body []byte) {
		before, _, _ := tw.Latest(l.origin)
		res := tw.submit(t, body)
		after, _, _ := tw.Latest(l.origin)
		if after.Size < before.Size {
			t.Fatalf("state went from %d to %d", before.Size, after.Size)
		}
		if res.Status == 200 {
			r, err := witness.ParseRequest(body)
			if err != nil {
				t.Fatalf("cosigned an unparsable body: %v", err)
			}
			checkCosigned(t, l, r.Checkpoint, res.Body)
		}
	})
}
