package promset

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

func counter(name string) prometheus.Counter {
	return prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: "a test counter"})
}

func TestRegisterUnregister(t *testing.T) {
	reg := prometheus.NewRegistry()
	s, err := Register(reg, "test metrics", counter("a_total"), counter("b_total"))
	if err != nil {
		t.Fatal(err)
	}
	// A second set with one name taken fails whole and leaves its first collector out.
	if _, err := Register(reg, "other metrics", counter("c_total"), counter("a_total")); err == nil || !strings.Contains(err.Error(), "other metrics") {
		t.Fatalf("a duplicate name: %v", err)
	}
	if _, err := Register(reg, "again", counter("c_total")); err != nil {
		t.Fatalf("c_total left registered by a failed set: %v", err)
	}
	s.Unregister()
	s.Unregister()
	if _, err := Register(reg, "reopened", counter("a_total"), counter("b_total")); err != nil {
		t.Fatalf("after Unregister the names are not free: %v", err)
	}
	if s, err := Register(nil, "nowhere", counter("a_total")); err != nil || s == nil {
		t.Fatalf("a nil registerer: %v %v", s, err)
	}
	var none *Set
	none.Unregister()
}
