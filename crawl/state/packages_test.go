package state_test

import (
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/histor-observer/histor/crawl/state"
	"github.com/histor-observer/histor/sandbox"
)

func TestPackageRuns(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	st, err := state.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.PackageRun("t1"); !errors.Is(err, state.ErrNotFound) {
		t.Fatalf("before any run: %v", err)
	}
	at := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	for i, v := range []string{"1.0.0", "1.1.0"} {
		r := state.PackageRun{TargetID: "t1", Package: "npm:x@" + v, Version: v, Status: sandbox.StatusOK, ObservedAt: at.Add(time.Duration(i) * time.Hour)}
		if err := st.PutPackageRun(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.PutPackageRun(state.PackageRun{TargetID: "t2", Version: "3", Status: sandbox.StatusExited}); err != nil {
		t.Fatal(err)
	}
	if err := st.PutPackageRun(state.PackageRun{TargetID: "t3"}); err == nil {
		t.Error("a run without a version was kept")
	}
	st.Close()
	if st, err = state.Open(dir, nil); err != nil { // durable across a reopen
		t.Fatal(err)
	}
	defer st.Close()
	last, err := st.PackageRun("t1")
	if err != nil || last.Version != "1.1.0" {
		t.Fatalf("latest %+v %v", last, err)
	}
	if v, err := st.PackageVersion("t1", "1.0.0"); err != nil || v.Package != "npm:x@1.0.0" {
		t.Fatalf("version 1.0.0: %+v %v", v, err)
	}
	if _, err := st.PackageVersion("t1", "2.0.0"); !errors.Is(err, state.ErrNotFound) {
		t.Errorf("an unobserved version: %v", err)
	}
	// A poisoned attempt at the next version is that version's record but
	// leaves the last run that said something as the latest.
	if err := st.PutPackageRun(state.PackageRun{TargetID: "t1", Version: "1.2.0", Status: sandbox.StatusPoisoned}); err != nil {
		t.Fatal(err)
	}
	if last, _ := st.PackageRun("t1"); last.Version != "1.1.0" {
		t.Errorf("after a poisoned 1.2.0 the latest run is %s, want 1.1.0", last.Version)
	}
	if v, err := st.PackageVersion("t1", "1.2.0"); err != nil || v.Status != sandbox.StatusPoisoned {
		t.Errorf("the poisoned version's record: %+v %v", v, err)
	}
	all, _ := st.PackageRuns()
	vs, _ := st.PackageVersions("t1", 0)
	if len(all) != 2 || len(vs) != 3 {
		t.Errorf("%d latest runs, %d versions of t1", len(all), len(vs))
	}
}
