package tbfail

import "testing"

func TestMessage(t *testing.T) {
	after := false
	if msg := Message(t, func(tb testing.TB) { tb.Fatalf("no %s", "series"); after = true }); msg != "no series" || after {
		t.Errorf("Fatalf: %q, went on after it: %v", msg, after)
	}
	if msg := Message(t, func(tb testing.TB) { tb.Fatal("gone", 1) }); msg != "gone1" {
		t.Errorf("Fatal: %q", msg)
	}
	if msg := Message(t, func(tb testing.TB) { tb.Helper() }); msg != "" {
		t.Errorf("a helper that did not fail: %q", msg)
	}
}
