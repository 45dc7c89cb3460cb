package state

import (
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/cockroachdb/pebble"
)

// This file holds the records the reading API lists per target: the
// timeline (Span), the labels (LabelRef), change sequence numbers and the
// client reports /check counts.

// spanKey orders a target's spans oldest first.
func spanKey(s *Span) string {
	return prefixSpan + s.TargetID + "/" + hex16(uint64(s.From.UnixNano()))
}

func labelKey(l *LabelRef) string {
	return prefixLabel + l.TargetID + "/" + hex16(l.LeafIndex)
}

func hex16(v uint64) string {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], v)
	return hex.EncodeToString(b[:])
}

func addHistory(b *pebble.Batch, u Update) error {
	if u.Span != nil {
		if u.Span.TargetID == "" {
			return errors.New("storing span: target id is required")
		}
		if err := setJSON(b, spanKey(u.Span), u.Span); err != nil {
			return err
		}
	}
	for i := range u.Labels {
		l := &u.Labels[i]
		if l.TargetID == "" || l.ID == "" {
			return errors.New("storing label reference: target id and label id are required")
		}
		if err := setJSON(b, labelKey(l), l); err != nil {
			return err
		}
		if err := b.Set([]byte(prefixLabelID+l.ID), []byte(l.TargetID), nil); err != nil {
			return err
		}
	}
	return nil
}

// Spans returns target id's timeline, oldest span first.
func (s *Store) Spans(id string) ([]Span, error) {
	return listJSON[Span](s, prefixSpan+id+"/", 0, "span")
}

// Labels returns the labels issued for target id, in log order.
func (s *Store) Labels(id string) ([]LabelRef, error) {
	return listJSON[LabelRef](s, prefixLabel+id+"/", 0, "label reference")
}

// LabelTarget returns the id of the target label id was issued for.
func (s *Store) LabelTarget(labelID string) (string, error) {
	var target string
	err := s.read(func(r pebble.Reader) error {
		val, closer, err := r.Get([]byte(prefixLabelID + labelID))
		if errors.Is(err, pebble.ErrNotFound) {
			return ErrNotFound
		}
		if err != nil {
			return fmt.Errorf("reading label %s: %w", labelID, err)
		}
		defer closer.Close()
		target = string(val)
		return nil
	})
	return target, err
}

// nextSeqs reserves n change sequence numbers, returning the first, and
// records the last in b. The caller holds commitMu.
func (s *Store) nextSeqs(b *pebble.Batch, n int) (int64, error) {
	var last int64
	if err := s.getJSON(keyChangeSeq, &last); err != nil && !errors.Is(err, ErrNotFound) {
		return 0, err
	}
	if n == 0 {
		return last + 1, nil
	}
	if err := setJSON(b, keyChangeSeq, last+int64(n)); err != nil {
		return 0, err
	}
	return last + 1, nil
}

func seqKey(seq int64) string { return prefixSeq + hex16(uint64(seq)) }

// ChangeBySeq returns the change with HISTOR's integer id seq.
func (s *Store) ChangeBySeq(seq int64) (*Change, error) {
	if seq <= 0 {
		return nil, ErrNotFound
	}
	return s.changeAt(seqKey(seq), fmt.Sprintf("change %d", seq))
}

// ChangesBefore returns up to limit changes with Seq below before (before ≤
// 0: from the newest), highest Seq first.
func (s *Store) ChangesBefore(before int64, limit int) ([]Change, error) {
	upper := afterPrefix(prefixSeq)
	if before > 0 {
		upper = seqKey(before)
	}
	var out []Change
	err := s.read(func(r pebble.Reader) error {
		it, err := r.NewIter(&pebble.IterOptions{LowerBound: []byte(prefixSeq), UpperBound: []byte(upper)})
		if err != nil {
			return fmt.Errorf("listing changes: %w", err)
		}
		defer it.Close()
		for ok := it.Last(); ok && (limit <= 0 || len(out) < limit); ok = it.Prev() {
			var c Change
			if err := getJSONIn(r, string(it.Value()), &c); err != nil {
				return err
			}
			out = append(out, c)
		}
		if err := it.Error(); err != nil {
			return fmt.Errorf("listing changes: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// ClientReport is one (target, digest, day) count from /check's contribute.
type ClientReport struct {
	TargetID string `json:"targetId"`
	Day      string `json:"day"` // YYYY-MM-DD, UTC
	Digest   string `json:"toolSetDigest"`
	Count    int64  `json:"count"`
}

func reportKey(target, day, digest string) string {
	return prefixReport + target + "/" + day + "/" + digest
}

// ReportRetention is how long client reports are kept, HISTOR's: they are
// a rolling window, not an archive (nothing reads past 30 days).
const ReportRetention = 90 * 24 * time.Hour

// AddClientReport adds one to the count of (target, digest, day). Nothing
// else about the caller is kept. The first report of each new day first
// prunes the days older than ReportRetention before it, so the store keeps
// a bounded window without a job of its own.
func (s *Store) AddClientReport(target, digest, day string) error {
	// The digest is the key's last part and SRI base64 holds '/', so only the
	// target and the day must be free of it.
	d, err := time.Parse(time.DateOnly, day)
	if target == "" || digest == "" || err != nil || strings.Contains(target, "/") {
		return errors.New("storing client report: target, digest and a YYYY-MM-DD day are required; target without '/'")
	}
	s.commitMu.Lock()
	defer s.commitMu.Unlock()
	if day > s.prunedOn {
		if _, err := s.pruneReports(d.Add(-ReportRetention).Format(time.DateOnly)); err != nil {
			return err
		}
		s.prunedOn = day
	}
	r := ClientReport{TargetID: target, Day: day, Digest: digest}
	key := reportKey(target, day, digest)
	if err := s.getJSON(key, &r); err != nil && !errors.Is(err, ErrNotFound) {
		return err
	}
	r.Count++
	return s.put(key, r)
}

// PruneClientReports deletes every client report of a day before before
// (YYYY-MM-DD) and returns how many it deleted.
func (s *Store) PruneClientReports(before string) (int, error) {
	if _, err := time.Parse(time.DateOnly, before); err != nil {
		return 0, fmt.Errorf("pruning client reports: day %q is not YYYY-MM-DD", before)
	}
	s.commitMu.Lock()
	defer s.commitMu.Unlock()
	return s.pruneReports(before)
}

// pruneReports deletes the reports before day, one range per target: keys
// order by target, then day, so it reads one key per target and the
// reports it deletes. The caller holds commitMu.
func (s *Store) pruneReports(before string) (int, error) {
	b := s.db.NewBatch()
	defer b.Close()
	var n int
	err := s.read(func(r pebble.Reader) error {
		var err error
		n, err = prunedReports(r, b, before)
		return err
	})
	if err != nil || n == 0 {
		return 0, err
	}
	if err := s.view.Commit(b); err != nil {
		return 0, fmt.Errorf("pruning client reports: %w", err)
	}
	return n, nil
}

// prunedReports adds to b the deletion of r's reports before day and returns how many.
func prunedReports(r pebble.Reader, b *pebble.Batch, before string) (int, error) {
	it, err := r.NewIter(&pebble.IterOptions{LowerBound: []byte(prefixReport), UpperBound: []byte(afterPrefix(prefixReport))})
	if err != nil {
		return 0, fmt.Errorf("pruning client reports: %w", err)
	}
	defer it.Close()
	n := 0
	for ok := it.First(); ok; {
		target, _, _ := strings.Cut(string(it.Key()[len(prefixReport):]), "/")
		from, to := prefixReport+target+"/", prefixReport+target+"/"+before
		k := 0
		for ; ok && string(it.Key()) < to; ok = it.Next() {
			k++
		}
		if k > 0 {
			if err := b.DeleteRange([]byte(from), []byte(to), nil); err != nil {
				return 0, fmt.Errorf("pruning client reports: %w", err)
			}
		}
		n += k
		ok = it.SeekGE([]byte(afterPrefix(from)))
	}
	if err := it.Error(); err != nil {
		return 0, fmt.Errorf("pruning client reports: %w", err)
	}
	return n, nil
}

// afterPrefix is the least key after every key that starts with prefix,
// which ends in '/'.
func afterPrefix(prefix string) string {
	return prefix[:len(prefix)-1] + string(rune(prefix[len(prefix)-1]+1))
}

// ClientReports returns target id's reports from day since (YYYY-MM-DD)
// on, oldest day first. It seeks straight to since, so the older days
// kept are never read.
func (s *Store) ClientReports(id, since string) ([]ClientReport, error) {
	from := prefixReport + id + "/"
	var out []ClientReport
	err := s.read(func(r pebble.Reader) error {
		it, err := r.NewIter(&pebble.IterOptions{LowerBound: []byte(from + since), UpperBound: []byte(afterPrefix(from))})
		if err != nil {
			return fmt.Errorf("listing client reports: %w", err)
		}
		defer it.Close()
		for ok := it.First(); ok; ok = it.Next() {
			var rep ClientReport
			if err := json.Unmarshal(it.Value(), &rep); err != nil {
				return fmt.Errorf("decoding client report: %w", err)
			}
			out = append(out, rep)
		}
		if err := it.Error(); err != nil {
			return fmt.Errorf("listing client reports: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// ParseSeq reads a change id as HISTOR writes it: a positive decimal integer.
func ParseSeq(s string) (int64, bool) {
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil && n > 0 && strconv.FormatInt(n, 10) == s
}
