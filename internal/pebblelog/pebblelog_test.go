package pebblelog

import (
	"strings"
	"testing"
)

func TestFatalfPanicsNamingTheError(t *testing.T) {
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(string), "pebble: disk 7 gone") {
			t.Fatalf("recovered %v", r)
		}
	}()
	Quiet{}.Infof("chatter %d", 1)
	Quiet{}.Fatalf("disk %d gone", 7)
}
