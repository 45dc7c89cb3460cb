package log

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble"
	"github.com/cockroachdb/pebble/vfs"

	"github.com/histor-observer/histor/internal/pebbledb"
)

// statHook is a vfs.FS whose first Stat of a table runs hook before answering.
type statHook struct {
	vfs.FS
	hook  func(name string)
	fired bool
}

func (h *statHook) Stat(name string) (os.FileInfo, error) {
	if !h.fired && strings.HasSuffix(name, ".sst") {
		h.fired = true
		h.hook(name)
	}
	return h.FS.Stat(name)
}

// TestCheckTablesAcrossACompaction: Pebble compacts from Open on and deletes the tables a
// compaction replaced, so a table listed a moment ago can be gone, rightly. checkTables must
// not call that store corrupt (CI once refused a sound log this way), while a table still
// listed and missing stays corrupt (TestCorruptionRefused, "deleted sstable").
func TestCheckTablesAcrossACompaction(t *testing.T) {
	mem := vfs.NewMem()
	db, err := pebble.Open("db", &pebble.Options{FS: mem, Logger: pebbledb.Quiet(discardLogger()), DisableAutomaticCompactions: true}) // only the hook compacts
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for round := range 2 { // two overlapping tables in L0, so a compaction rewrites them
		for k := range 100 {
			db.Set(fmt.Appendf(nil, "k%03d", k), fmt.Appendf(nil, "v%d", round), pebble.NoSync)
		}
		if err := db.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	var gone string
	h := &statHook{FS: mem, hook: func(name string) {
		if err := db.Compact([]byte("k"), []byte("l"), false); err != nil {
			t.Fatal(err)
		}
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			if _, err := mem.Stat(name); os.IsNotExist(err) {
				gone = name
				return
			}
		}
		t.Fatalf("%s was never deleted after the compaction", name)
	}}
	if err := checkTables(h, db, "db"); err != nil {
		t.Fatalf("a table compacted away between listing and stat: %v", err)
	}
	if gone == "" {
		t.Fatal("the compaction ran under no stat: the test proved nothing")
	}
	live, err := liveTables(db)
	if err != nil {
		t.Fatal(err)
	}
	if _, still := live[mem.PathBase(gone)]; still || len(live) == 0 {
		t.Fatalf("after the compaction the live tables are %v (%s deleted)", live, gone)
	}
}
