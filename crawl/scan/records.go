package scan

import (
	_ "embed"
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/histor-observer/histor/log/canon"
	"github.com/histor-observer/histor/log/mtl"
)

// Record is one threat record: a known-malicious or impersonating server name
// or package, given exactly (Name) or as an RE2 pattern over the lower-cased
// name (Pattern), never both.
type Record struct {
	Name      string `json:"name,omitempty"`
	Pattern   string `json:"pattern,omitempty"`
	Kind      string `json:"kind"`      // one of RecordKinds
	Reference string `json:"reference"` // where the finding is documented
	Added     string `json:"added"`     // YYYY-MM-DD
}

// RecordKinds are the kinds a record may carry.
var RecordKinds = []string{"malicious", "impersonation", "typosquat", "compromised"}

// RecordSet is a loaded, validated threat record set; immutable after load.
type RecordSet struct {
	id, version, digest string
	records             []Record
	byName              map[string]int // lower-cased exact name → record index
	bySkeleton          map[string]int // confusable skeleton of a name → record index
	patterns            []recordPattern
}

type recordPattern struct {
	re  *regexp.Regexp
	rec int
}

type recordSetFile struct {
	ID      string   `json:"id"`
	Version string   `json:"version"`
	Note    string   `json:"note,omitempty"`
	Digest  string   `json:"digest,omitempty"`
	Records []Record `json:"records"`
}

//go:embed threat-records.json
var defaultRecordSet []byte

// DefaultRecords returns the record set shipped with histor (a copy of
// configs/threat-records.json; a test keeps the two identical).
func DefaultRecords() *RecordSet {
	rs, err := LoadRecordSet(defaultRecordSet)
	if err != nil {
		panic("scan: embedded record set does not load: " + err.Error())
	}
	return rs
}

// LoadRecordSetFile reads and loads a record set from path.
func LoadRecordSetFile(path string) (*RecordSet, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading record set: %w", err)
	}
	return LoadRecordSet(b)
}

// LoadRecordSet parses a record set strictly and validates every record. If
// the document states a digest, it must be the computed one.
func LoadRecordSet(b []byte) (*RecordSet, error) {
	var f recordSetFile
	if err := decodeStrict(b, &f); err != nil {
		return nil, fmt.Errorf("loading record set: %w", err)
	}
	if f.ID == "" || f.Version == "" {
		return nil, errors.New("loading record set: id and version are required")
	}
	rs := &RecordSet{id: f.ID, version: f.Version, records: sortRecords(f.Records),
		byName: map[string]int{}, bySkeleton: map[string]int{}}
	for i, r := range rs.records {
		if err := rs.index(i, r); err != nil {
			return nil, fmt.Errorf("loading record set: record %d: %w", i, err)
		}
	}
	d, err := digestRecords(f.Version, rs.records)
	if err != nil {
		return nil, fmt.Errorf("loading record set: %w", err)
	}
	if f.Digest != "" && f.Digest != d {
		return nil, fmt.Errorf("loading record set: stated digest %s is not the computed %s", f.Digest, d)
	}
	rs.digest = d
	return rs, nil
}

func (rs *RecordSet) index(i int, r Record) error {
	if (r.Name == "") == (r.Pattern == "") {
		return errors.New("exactly one of name and pattern is required")
	}
	if !slices.Contains(RecordKinds, r.Kind) || r.Reference == "" {
		return fmt.Errorf("kind %q or reference invalid", r.Kind)
	}
	if _, err := time.Parse(time.DateOnly, r.Added); err != nil {
		return fmt.Errorf("added %q is not YYYY-MM-DD", r.Added)
	}
	if r.Pattern != "" {
		re, err := regexp.Compile(r.Pattern)
		if err != nil {
			return fmt.Errorf("compiling pattern: %w", err)
		}
		rs.patterns = append(rs.patterns, recordPattern{re, i})
		return nil
	}
	lower := strings.ToLower(r.Name)
	if _, dup := rs.byName[lower]; dup {
		return fmt.Errorf("duplicate name %q", r.Name)
	}
	rs.byName[lower] = i
	rs.bySkeleton[skeleton(r.Name)] = i
	return nil
}

// sortRecords orders records for the digest: by name or pattern, then kind,
// in UTF-16 code units.
func sortRecords(in []Record) []Record {
	out := slices.Clone(in)
	if out == nil {
		out = []Record{}
	}
	slices.SortStableFunc(out, func(a, b Record) int {
		if c := canon.CompareUTF16(a.Name+"\x00"+a.Pattern, b.Name+"\x00"+b.Pattern); c != 0 {
			return c
		}
		return canon.CompareUTF16(a.Kind, b.Kind)
	})
	return out
}

func digestRecords(version string, sorted []Record) (string, error) {
	jcs, err := canon.Marshal(struct {
		Version string   `json:"version"`
		Records []Record `json:"records"`
	}{version, sorted})
	if err != nil {
		return "", fmt.Errorf("canonicalising records: %w", err)
	}
	return mtl.SRI(jcs), nil
}

// ID is the record set's identifier (a URN).
func (rs *RecordSet) ID() string { return rs.id }

// Version is the record set's version string.
func (rs *RecordSet) Version() string { return rs.version }

// Digest is the SRI over the RFC 8785 form of {version, records}.
func (rs *RecordSet) Digest() string { return rs.digest }

// Records returns a copy of the records in digest order.
func (rs *RecordSet) Records() []Record { return slices.Clone(rs.records) }
