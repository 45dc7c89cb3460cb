// Package docs holds the project's documents; its test keeps what they
// cite true.
package docs

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// testRef is a test the documents cite as the one that tries an attack or
// measures a figure: path/to/x_test.go:TestName (or Fuzz…, Benchmark…).
var testRef = regexp.MustCompile(`([a-z0-9_/]+_test\.go):((?:Test|Fuzz|Benchmark)[A-Za-z0-9_]+)`)

// TestCitedTestsExist: every test a document names is in the file it names,
// so a test that moved or was renamed fails here, not in a reader's hands.
func TestCitedTestsExist(t *testing.T) {
	docs, err := filepath.Glob("*.md")
	if err != nil || len(docs) == 0 {
		t.Fatalf("no documents found: %v", err)
	}
	cited := 0
	for _, doc := range docs {
		text, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range testRef.FindAllStringSubmatch(string(text), -1) {
			cited++
			src, err := os.ReadFile(filepath.Join("..", m[1]))
			if err != nil {
				t.Errorf("%s cites %s:%s, but the file is not there", doc, m[1], m[2])
				continue
			}
			if !strings.Contains(string(src), "\nfunc "+m[2]+"(") {
				t.Errorf("%s cites %s:%s, but the file has no such function", doc, m[1], m[2])
			}
		}
	}
	if cited == 0 {
		t.Error("no test cited in any document; the pattern reads nothing")
	}
	t.Logf("%d citations checked", cited)
}
