package state

import (
	"errors"
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
