package faultfs

import (
	"fmt"
	"strings"
	"time"
)

// Counter is the injector of a sweep's counting run: it fails nothing and counts each kind
// of call and the bytes written, so that Sweep knows where the run can be failed.
type Counter struct {
	plans map[Op]*Plan
	room  *Full
	all   All
}

// NewCounter is a Counter that has counted nothing.
func NewCounter() *Counter {
	c := &Counter{plans: map[Op]*Plan{}, room: &Full{Bytes: 1 << 62}}
	c.all = All{c.room}
	for _, op := range Ops {
		c.plans[op] = &Plan{Kinds: []Op{op}}
		c.all = append(c.all, c.plans[op])
	}
	return c
}

// Inject implements Injector.
func (c *Counter) Inject(op Op, path string, n int) error { return c.all.Inject(op, path, n) }

// Seen is how many calls of kind op were made.
func (c *Counter) Seen(op Op) int { return c.plans[op].Seen() }

// Written is how many bytes were written.
func (c *Counter) Written() int64 { return c.room.Used() }

// String lists the calls counted by kind, and the bytes.
func (c *Counter) String() string {
	var b strings.Builder
	for _, op := range Ops {
		fmt.Fprintf(&b, "%s %d, ", op, c.Seen(op))
	}
	fmt.Fprintf(&b, "%d bytes", c.Written())
	return b.String()
}

// Case is one fault run of a sweep: the injector to arm, and, once the run is over, whether
// it met the fault.
type Case struct {
	Name string
	plan *Plan
	full *Full
}

// Injector is what the run arms.
func (c Case) Injector() Injector {
	if c.full != nil {
		return c.full
	}
	return c.plan
}

// FullDisk says the case is a disk that filled: every run it meets must fail a write.
func (c Case) FullDisk() bool { return c.full != nil }

// Missed says why the run did not meet the case's fault, "" when it did. skip says the
// reason is no failure: the call the plan fails lay past the calls this run made (Pebble
// removes obsolete files in the background, so how many calls of a kind a run makes before
// it ends can vary with timing).
func (c Case) Missed() (why string, skip bool) {
	switch {
	case c.full != nil && c.full.Refused() == 0:
		return fmt.Sprintf("a disk full at %d bytes refused no write (%d written)", c.full.Bytes, c.full.Used()), false
	case c.full != nil:
		return "", false
	case len(c.plan.Fired()) > 0:
		return "", false
	case c.plan.Seen() < c.plan.At:
		return fmt.Sprintf("this run made %d such calls, not %d", c.plan.Seen(), c.plan.At), true
	}
	return fmt.Sprintf("the fault never fired (%d calls)", c.plan.Seen()), false
}

// Sweep is the fault runs that follow a counting run: each kind of call failed at k call
// numbers spread over those counted (the first and the last among them), once (a transient
// error) and from then on (a disk that died), then a disk that fills at 10, 50 and 90 % of
// the bytes the counting run wrote.
func Sweep(counted *Counter, k int) []Case {
	var out []Case
	for _, op := range Ops {
		for _, at := range Spread(counted.Seen(op), k) {
			for _, sticky := range []bool{false, true} {
				out = append(out, Case{
					Name: fmt.Sprintf("%s#%d/%s", op, at, map[bool]string{false: "once", true: "from-then-on"}[sticky]),
					plan: &Plan{Kinds: []Op{op}, At: at, Sticky: sticky},
				})
			}
		}
	}
	for _, frac := range []int64{10, 50, 90} {
		out = append(out, Case{
			Name: fmt.Sprintf("full-disk-at-%d%%", frac),
			full: &Full{Bytes: counted.Written() * frac / 100},
		})
	}
	return out
}

// PanicError is a panic that Within caught.
type PanicError struct{ Value any }

// Error implements error.
func (e *PanicError) Error() string { return fmt.Sprintf("panic: %v", e.Value) }

// HangError is a call that Within gave up waiting for.
type HangError struct{ After time.Duration }

// Error implements error.
func (e *HangError) Error() string { return fmt.Sprintf("no answer after %s", e.After) }

// Within runs fn and returns its error; a *PanicError if it panicked; a *HangError if it
// had not returned after d (it goes on in the background: the test must fail). Neither
// carries a fault (IsFault is false), so a store call over a failing disk that panics or
// hangs is never taken for one that failed as it should.
func Within(d time.Duration, fn func() error) error {
	done := make(chan error, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				done <- &PanicError{Value: p}
			}
		}()
		done <- fn()
	}()
	select {
	case err := <-done:
		return err
	case <-time.After(d):
		return &HangError{After: d}
	}
}
