// Package tbfail tests test helpers: it runs one against a testing.TB that records the
// helper's Fatalf instead of failing the test, so a test can show that a helper fails when it
// should and says why.
package tbfail

import (
	"fmt"
	"runtime"
	"sync"
	"testing"
)

// recorder is t whose Fatalf records its message and ends the goroutine, as testing's does.
type recorder struct {
	testing.TB
	mu  sync.Mutex
	msg string
}

func (r *recorder) Helper() {}

func (r *recorder) Fatal(args ...any) { r.fail(fmt.Sprint(args...)) }

func (r *recorder) Fatalf(format string, args ...any) { r.fail(fmt.Sprintf(format, args...)) }

func (r *recorder) fail(msg string) {
	r.mu.Lock()
	r.msg = msg
	r.mu.Unlock()
	runtime.Goexit()
}

// Message runs fn in a goroutine of its own against a testing.TB over t and returns what fn
// failed with through Fatal or Fatalf: "" when it did not. Anything else fn calls goes to t.
func Message(t testing.TB, fn func(testing.TB)) string {
	r := &recorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn(r)
	}()
	<-done
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.msg
}
