package log

import (
	"errors"
	"testing"
	"time"
)

// TestCloseWaitsForReads: Close waits for a read under way (closing Pebble under an open
// iterator made the read's next step panic), reads that begin meanwhile answer ErrClosed,
// and the read under way ends whole.
func TestCloseWaitsForReads(t *testing.T) {
	l := openTest(t, testConfig(t.TempDir()))
	appendN(t, l, 0, 300) // two entry bundles
	inRead, goOn := make(chan struct{}), make(chan struct{})
	read := make(chan error, 1)
	go func() {
		n := 0
		read <- l.EachEntry(0, 300, func(i uint64, _ []byte) error {
			if n++; n == 1 {
				close(inRead)
				<-goOn
			}
			return nil
		})
	}()
	<-inRead
	closed := make(chan error, 1)
	go func() { closed <- l.Close() }()
	select {
	case err := <-closed:
		t.Fatalf("Close returned %v with a read under way", err)
	case <-time.After(100 * time.Millisecond):
	}
	if _, err := l.InclusionProof(0, 300); !errors.Is(err, ErrClosed) {
		t.Errorf("a read after Close began: %v, want ErrClosed", err)
	}
	close(goOn)
	if err := <-read; err != nil {
		t.Fatalf("the read under way: %v", err)
	}
	if err := <-closed; err != nil {
		t.Fatalf("Close: %v", err)
	}
}
