package log

import (
	"context"
	"fmt"
	"testing"

	"github.com/histor-observer/histor/log/mtl"
)

// TestEvidenceNotServedBeforeDurable: Pebble makes a batch visible before its WAL sync, so
// evidence must not be served until the head of the batch that stored it is published, or a
// crash could take back a body a client was already given.
func TestEvidenceNotServedBeforeDurable(t *testing.T) {
	l := openTest(t, testConfig(t.TempDir()))
	for i := range 30 {
		body := fmt.Appendf(nil, `{"evidence":%d}`, i)
		sri := mtl.SRI(body)
		errc := make(chan error, 1)
		go func() {
			_, err := l.Append(context.Background(), []Entry{testEntry(i)}, []Evidence{{Kind: "toolsets", Body: body}})
			errc <- err
		}()
		for seen := false; !seen; {
			select {
			case err := <-errc:
				if err != nil {
					t.Fatal(err)
				}
				errc = nil
			default:
			}
			if _, err := l.Evidence("toolsets", sri); err == nil {
				if size := l.Size(); size < uint64(i+1) {
					t.Fatalf("evidence %d served while the durable head is at size %d, before its batch", i, size)
				}
				seen = true
			} else if errc == nil {
				t.Fatalf("evidence %d not served after its Append returned: %v", i, err)
			}
		}
		if errc != nil {
			if err := <-errc; err != nil {
				t.Fatal(err)
			}
		}
	}
}
