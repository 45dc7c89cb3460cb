package scan

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// The embedded copies must be byte-identical to configs/, the documents
// operators read and edit.
func TestEmbeddedCopiesMatchConfigs(t *testing.T) {
	for _, c := range []struct {
		file     string
		embedded []byte
	}{{"pattern-set.json", defaultPatternSet}, {"threat-records.json", defaultRecordSet}} {
		b, err := os.ReadFile(filepath.Join("..", "..", "configs", c.file))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(b, c.embedded) {
			t.Errorf("crawl/scan/%s differs from configs/%s; copy configs/%s over it", c.file, c.file, c.file)
		}
	}
}

func TestDefaultsLoad(t *testing.T) {
	ps := Default()
	if ps.ID() == "" || len(ps.Rules()) < 20 {
		t.Fatalf("default pattern set: id %q, %d rules", ps.ID(), len(ps.Rules()))
	}
	rs := DefaultRecords()
	if rs.ID() == "" || len(rs.Records()) == 0 {
		t.Fatalf("default record set: id %q, %d records", rs.ID(), len(rs.Records()))
	}
	if _, err := LoadPatternSetFile(filepath.Join("..", "..", "configs", "pattern-set.json")); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadRecordSetFile(filepath.Join("..", "..", "configs", "threat-records.json")); err != nil {
		t.Fatal(err)
	}
}
