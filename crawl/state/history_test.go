package state

import (
	"errors"
	"slices"
	"testing"
	"time"
)

func TestChangeSeqsInCommitOrder(t *testing.T) {
	s, _ := openTemp(t)
	at := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	mk := func(id string, d time.Duration) *Change {
		return &Change{ID: id, TargetID: "t" + id, At: at.Add(d), Summary: []byte("{}")}
	}
	a, b, c := mk("a", 0), mk("b", time.Hour), mk("c", -time.Hour)
	if err := s.CommitAll([]Update{{Change: a}, {}, {Change: b}}); err != nil {
		t.Fatal(err)
	}
	if err := s.CommitAll([]Update{{Change: c}, {Change: mk("a", 0)}}); err != nil {
		t.Fatal(err)
	}
	if a.Seq != 1 || b.Seq != 2 || c.Seq != 3 {
		t.Fatalf("seqs = %d %d %d, want 1 2 3", a.Seq, b.Seq, c.Seq)
	}
	got, err := s.ChangesBefore(0, 0)
	if err != nil || len(got) != 3 || got[0].ID != "c" || got[2].ID != "a" {
		t.Fatalf("ChangesBefore(0) = %+v, %v (a change committed twice must keep its seq)", got, err)
	}
	got, err = s.ChangesBefore(3, 1)
	if err != nil || len(got) != 1 || got[0].Seq != 2 {
		t.Fatalf("ChangesBefore(3, 1) = %+v, %v", got, err)
	}
	if ch, err := s.ChangeBySeq(3); err != nil || ch.ID != "c" {
		t.Fatalf("ChangeBySeq(3) = %+v, %v", ch, err)
	}
	if _, err := s.ChangeBySeq(4); !errors.Is(err, ErrNotFound) {
		t.Fatalf("ChangeBySeq(4): %v, want ErrNotFound", err)
	}
	if n, ok := ParseSeq("12"); !ok || n != 12 {
		t.Fatal("ParseSeq(12)")
	}
	for _, bad := range []string{"", "0", "-1", "012", "1e3", "abc"} {
		if _, ok := ParseSeq(bad); ok {
			t.Errorf("ParseSeq(%q) accepted", bad)
		}
	}
}

func TestSpansLabelsReports(t *testing.T) {
	s, _ := openTemp(t)
	at := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	sp := &Span{TargetID: "t1", From: at, Until: at, Count: 1, Status: "ok", ToolSetDigest: "sha256-a"}
	labels := []LabelRef{{TargetID: "t1", ID: "urn:uuid:2", LeafIndex: 7}, {TargetID: "t1", ID: "urn:uuid:1", LeafIndex: 3}}
	if err := s.CommitAll([]Update{{Span: sp, Labels: labels}}); err != nil {
		t.Fatal(err)
	}
	ext := *sp
	ext.Until, ext.Count = at.Add(time.Hour), 2
	next := &Span{TargetID: "t1", From: at.Add(2 * time.Hour), Until: at.Add(2 * time.Hour), Count: 1, Status: "timeout"}
	if err := s.CommitAll([]Update{{Span: &ext}, {Span: next}}); err != nil {
		t.Fatal(err)
	}
	spans, err := s.Spans("t1")
	if err != nil || len(spans) != 2 || spans[0].Count != 2 || spans[1].Status != "timeout" {
		t.Fatalf("Spans = %+v, %v", spans, err)
	}
	got, err := s.Labels("t1")
	if err != nil || len(got) != 2 || got[0].LeafIndex != 3 {
		t.Fatalf("Labels = %+v, %v", got, err)
	}
	if tid, err := s.LabelTarget("urn:uuid:2"); err != nil || tid != "t1" {
		t.Fatalf("LabelTarget = %q, %v", tid, err)
	}
	for range 2 {
		if err := s.AddClientReport("t1", "sha256-a", "2026-11-01"); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.AddClientReport("t1", "sha256-b", "2026-10-01"); err != nil {
		t.Fatal(err)
	}
	reps, err := s.ClientReports("t1", "2026-10-15")
	if err != nil || len(reps) != 1 || reps[0].Count != 2 {
		t.Fatalf("ClientReports = %+v, %v", reps, err)
	}
	if err := s.AddClientReport("t/1", "d", "2026-11-01"); err == nil {
		t.Fatal("a target id with '/' was accepted")
	}
}

// TestClientReportsSeekToSince: a target's reports are read from the day
// asked for on, never from its first: a damaged record of an older day
// is not even decoded.
func TestClientReportsSeekToSince(t *testing.T) {
	s, _ := openTemp(t)
	for _, r := range []struct{ target, day string }{{"t1", "2026-11-02"}, {"t1", "2026-11-05"}, {"t10", "2026-11-03"}, {"t2", "2026-11-04"}} {
		if err := s.AddClientReport(r.target, "sha256-a/b+c=", r.day); err != nil {
			t.Fatal(err)
		}
	}
	b := s.db.NewBatch()
	if err := b.Set([]byte(reportKey("t1", "2026-11-01", "sha256-x")), []byte("{damaged"), nil); err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(nil); err != nil {
		t.Fatal(err)
	}
	reps, err := s.ClientReports("t1", "2026-11-02")
	if err != nil || len(reps) != 2 || reps[0].Day != "2026-11-02" || reps[1].Day != "2026-11-05" {
		t.Fatalf("ClientReports = %+v, %v; want t1's two days, not t10's", reps, err)
	}
	if _, err := s.ClientReports("t1", ""); err == nil {
		t.Error("reading from the first day decoded no damaged record")
	}
}

// TestClientReportsPruned: the first report of a day deletes every day
// more than ReportRetention (HISTOR's 90 days) before it, for every
// target, and keeps the rest.
func TestClientReportsPruned(t *testing.T) {
	s, _ := openTemp(t)
	today := time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)
	day := func(ago int) string { return today.AddDate(0, 0, -ago).Format(time.DateOnly) }
	for _, r := range []struct {
		target string
		ago    int
	}{{"t1", 200}, {"t1", 91}, {"t1", 90}, {"t1", 1}, {"t2", 95}, {"t3", 30}} {
		// Written oldest first, each prunes nothing a later one needs.
		if err := s.AddClientReport(r.target, "sha256-a", day(r.ago)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.AddClientReport("t2", "sha256-b", day(0)); err != nil {
		t.Fatal(err)
	}
	kept := map[string][]string{"t1": {day(90), day(1)}, "t2": {day(0)}, "t3": {day(30)}}
	for target, want := range kept {
		reps, err := s.ClientReports(target, "")
		var got []string
		for _, r := range reps {
			got = append(got, r.Day)
		}
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("%s: days %v, %v; want %v", target, got, err, want)
		}
	}
	if n, err := s.PruneClientReports(day(10)); err != nil || n != 2 {
		t.Errorf("pruning before %s: %d, %v; want t1's and t3's older days", day(10), n, err)
	}
}
