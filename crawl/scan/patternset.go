package scan

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"sync"

	"github.com/histor-observer/histor/log/canon"
	"github.com/histor-observer/histor/log/mtl"
)

// Surface names a part of a tool definition (or the server's instructions)
// that a rule runs against.
type Surface string

const (
	SurfaceName         Surface = "name"
	SurfaceDescription  Surface = "description"
	SurfaceInputSchema  Surface = "inputSchema"
	SurfaceOutputSchema Surface = "outputSchema"
	SurfaceInstructions Surface = "instructions"
)

var surfaces = []Surface{SurfaceName, SurfaceDescription, SurfaceInputSchema, SurfaceOutputSchema, SurfaceInstructions}

// Tiers: a block rule has no plausible benign reading in a tool definition; an
// advise rule is reported and never counts as more than a note.
const (
	TierBlock  = "block"
	TierAdvise = "advise"
)

var severities = []string{"info", "low", "medium", "high", "critical"}

// Rule is one row of a pattern set, exactly as published and digested.
type Rule struct {
	Code     string    `json:"code"`
	Severity string    `json:"severity"`
	Tier     string    `json:"tier"`
	Surfaces []Surface `json:"surfaces"`
	Source   string    `json:"source"` // RE2 syntax, matched against folded text unless Raw
	Flags    string    `json:"flags"`  // "" or "i"
	Guards   []string  `json:"guards"`
	Raw      bool      `json:"raw"` // match the text before folding
}

// PatternSet is a loaded, validated pattern set. It is immutable after load
// and safe for concurrent scans.
type PatternSet struct {
	id      string
	version string
	digest  string
	rules   []compiledRule // in digest order
}

type compiledRule struct {
	Rule
	re     *regexp.Regexp
	pre    prefilter
	guards []guard
	on     uint8 // bit i set: runs on surfaces[i]
}

// surfaceBit is the bit of a known surface in compiledRule.on, 0 if unknown.
func surfaceBit(s Surface) uint8 {
	if i := slices.Index(surfaces, s); i >= 0 {
		return 1 << i
	}
	return 0
}

type patternSetFile struct {
	ID      string `json:"id"`
	Version string `json:"version"`
	Note    string `json:"note,omitempty"`
	Digest  string `json:"digest,omitempty"`
	Rules   []Rule `json:"rules"`
}

//go:embed pattern-set.json
var defaultPatternSet []byte

// Default returns the pattern set shipped with histor (a copy of
// configs/pattern-set.json; a test keeps the two identical).
// The set is loaded once; a PatternSet is immutable, so callers share it.
func Default() *PatternSet { return loadDefault() }

var loadDefault = sync.OnceValue(func() *PatternSet {
	ps, err := LoadPatternSet(defaultPatternSet)
	if err != nil {
		panic("scan: embedded pattern set does not load: " + err.Error())
	}
	return ps
})

// LoadPatternSetFile reads and loads a pattern set from path.
func LoadPatternSetFile(path string) (*PatternSet, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading pattern set: %w", err)
	}
	return LoadPatternSet(b)
}

// LoadPatternSet parses a pattern set strictly (log/canon's parser: duplicate
// members, non-integer numbers and invalid UTF-8 are refused; unknown members
// are refused), compiles every rule and refuses unknown guards, surfaces,
// tiers, severities and flags. If the document states a digest, it must be the
// computed one.
func LoadPatternSet(b []byte) (*PatternSet, error) {
	var f patternSetFile
	if err := decodeStrict(b, &f); err != nil {
		return nil, fmt.Errorf("loading pattern set: %w", err)
	}
	if f.ID == "" || f.Version == "" || len(f.Rules) == 0 {
		return nil, errors.New("loading pattern set: id, version and at least one rule are required")
	}
	rules := sortRules(f.Rules)
	ps := &PatternSet{id: f.ID, version: f.Version}
	for i, r := range rules {
		cr, err := compileRule(r)
		if err != nil {
			return nil, fmt.Errorf("loading pattern set: rule %d (%s): %w", i, r.Code, err)
		}
		ps.rules = append(ps.rules, cr)
	}
	d, err := digestRules(f.Version, rules)
	if err != nil {
		return nil, fmt.Errorf("loading pattern set: %w", err)
	}
	if f.Digest != "" && f.Digest != d {
		return nil, fmt.Errorf("loading pattern set: stated digest %s is not the computed %s", f.Digest, d)
	}
	ps.digest = d
	return ps, nil
}

// decodeStrict runs the canonical parser first, for the refusals encoding/json
// cannot see, then decodes with unknown members refused.
func decodeStrict(b []byte, v any) error {
	if _, err := canon.Parse(b); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("decoding: %w", err)
	}
	return nil
}

func compileRule(r Rule) (compiledRule, error) {
	if r.Code == "" || !slices.Contains(severities, r.Severity) {
		return compiledRule{}, fmt.Errorf("code %q or severity %q invalid", r.Code, r.Severity)
	}
	if r.Tier != TierBlock && r.Tier != TierAdvise {
		return compiledRule{}, fmt.Errorf("unknown tier %q", r.Tier)
	}
	cr := compiledRule{Rule: r}
	for _, s := range r.Surfaces {
		bit := surfaceBit(s)
		if bit == 0 || cr.on&bit != 0 {
			return compiledRule{}, fmt.Errorf("unknown or repeated surface %q", s)
		}
		cr.on |= bit
	}
	if cr.on == 0 {
		return compiledRule{}, errors.New("no surfaces")
	}
	src, err := withFlags(r.Source, r.Flags)
	if err != nil {
		return compiledRule{}, err
	}
	if cr.re, err = regexp.Compile(src); err != nil {
		return compiledRule{}, fmt.Errorf("compiling source: %w", err)
	}
	cr.pre = newPrefilter(src)
	for _, g := range r.Guards {
		fn, ok := guards[g]
		if !ok {
			return compiledRule{}, fmt.Errorf("unknown guard %q", g)
		}
		cr.guards = append(cr.guards, fn)
	}
	return cr, nil
}

func withFlags(src, flags string) (string, error) {
	switch flags {
	case "":
		return src, nil
	case "i":
		return "(?i)" + src, nil
	}
	return "", fmt.Errorf("unsupported flags %q (only \"\" and \"i\")", flags)
}

// sortRules orders rules as the digest needs them: by code, then source, then
// flags, each compared in UTF-16 code units, so the digest does not depend on
// the order a file happens to list them in.
func sortRules(in []Rule) []Rule {
	rules := slices.Clone(in)
	for i := range rules {
		if rules[i].Guards == nil {
			rules[i].Guards = []string{}
		}
		if rules[i].Surfaces == nil {
			rules[i].Surfaces = []Surface{}
		}
	}
	slices.SortStableFunc(rules, func(a, b Rule) int {
		if c := canon.CompareUTF16(a.Code, b.Code); c != 0 {
			return c
		}
		if c := canon.CompareUTF16(a.Source, b.Source); c != 0 {
			return c
		}
		return canon.CompareUTF16(a.Flags, b.Flags)
	})
	return rules
}

func digestRules(version string, sorted []Rule) (string, error) {
	jcs, err := canon.Marshal(struct {
		Version string `json:"version"`
		Rules   []Rule `json:"rules"`
	}{version, sorted})
	if err != nil {
		return "", fmt.Errorf("canonicalising rules: %w", err)
	}
	return mtl.SRI(jcs), nil
}

// ID is the pattern set's identifier (a URN).
func (ps *PatternSet) ID() string { return ps.id }

// Version is the pattern set's version string.
func (ps *PatternSet) Version() string { return ps.version }

// Digest is the SRI (sha256-…) over the RFC 8785 form of {version, rules}.
func (ps *PatternSet) Digest() string { return ps.digest }

// Rules returns a copy of the rules in digest order.
func (ps *PatternSet) Rules() []Rule {
	out := make([]Rule, len(ps.rules))
	for i, r := range ps.rules {
		out[i] = r.Rule
	}
	return out
}

func (s Surface) String() string { return string(s) }
