package mcpface_test

import (
	"encoding/json"
	"testing"

	"github.com/histor-observer/histor/crawl/scan"
	"github.com/histor-observer/histor/log/awr"
	"github.com/histor-observer/histor/log/canon"
	"github.com/histor-observer/histor/log/mtl"
	"github.com/histor-observer/histor/node/mcpface"
)

// TestFaceToolWords holds the face's own tool definitions to what the node
// asks of every server: no pattern of its default set matches, no word
// DESIGN forbids, and the set has an MTL/1 digest.
func TestFaceToolWords(t *testing.T) {
	b, err := json.Marshal(mcpface.Tools)
	if err != nil {
		t.Fatal(err)
	}
	v, err := canon.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	tools := v.([]any)
	entries, err := mtl.Normalize(tools)
	if err != nil {
		t.Fatal(err)
	}
	if m := scan.Scan(scan.Default(), entries, nil); len(m) > 0 {
		t.Errorf("the face's tools match the node's own patterns: %+v", m)
	}
	if w := awr.ForbiddenWord(string(b)); w != "" {
		t.Errorf("the face's tools say %q", w)
	}
	if _, err := mtl.CanonicalToolSet(tools); err != nil {
		t.Errorf("the face's tools have no MTL/1 digest: %v", err)
	}
}
