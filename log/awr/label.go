package awr

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/histor-observer/histor/log/mtl"
)

// The four MTL/1 methods (PROFILE §7.1). Each label names exactly one.
const (
	MethodObservation = "urn:awr:mtl:1:method:tool-set-observation"
	MethodPatternScan = "urn:awr:mtl:1:method:tool-def-pattern-scan"
	MethodContinuity  = "urn:awr:mtl:1:method:tool-set-continuity"
	MethodNameThreat  = "urn:awr:mtl:1:method:name-threat-match"
)

// Label envelope constants.
const (
	MTLContext = "https://verify.modelmarket.dev/ns/awr/mtl/v1"
	LabelType  = "MCPTrustLabel"
	VerdictDoc = "VerificationVerdict"
)

// Verdicts. Only continuity may be "fail": the other methods have no
// proposition that could be shown false (PROFILE §7.1).
const (
	VerdictPass         = "pass"
	VerdictFail         = "fail"
	VerdictInconclusive = "inconclusive"
)

var methodNames = map[string]string{
	MethodObservation: "MTL/1 tool-set observation",
	MethodPatternScan: "MTL/1 tool-definition pattern scan (ARGUS WARDEN static-scan pattern set)",
	MethodContinuity:  "MTL/1 tool-set continuity",
	MethodNameThreat:  "MTL/1 name and coordinate threat match (ARGUS WARDEN built-in records)",
}

// AllowedVerdicts lists the verdicts each method may carry.
var AllowedVerdicts = map[string][]string{
	MethodObservation: {VerdictPass, VerdictInconclusive},
	MethodPatternScan: {VerdictPass, VerdictInconclusive},
	MethodContinuity:  {VerdictPass, VerdictFail, VerdictInconclusive},
	MethodNameThreat:  {VerdictPass, VerdictInconclusive},
}

// Ref is a digest reference: an identifier and the SRI of its bytes.
type Ref struct {
	ID        string
	DigestSRI string
}

// ToolSet restates the subject's tool set; DigestSRI is empty when the set
// was not digestible under MTL/1.
type ToolSet struct {
	Count     int
	DigestSRI string
}

// Server restates the subject descriptor's server block.
type Server struct {
	Name     string
	Registry string
}

// Evidence is an extra evidence entry (for example kind "argus-tool-pin"
// with Value). Empty members are omitted.
type Evidence struct {
	Kind      string
	ID        string
	DigestSRI string
	Value     string
}

// Reason is an MTL/1 reason code with a human-readable detail.
type Reason struct {
	Code   string
	Detail string
}

// PatternMatch is one match of the pattern scan (PROFILE §7.3).
type PatternMatch struct {
	Code     string
	Severity string
	Tier     string // "block" or "advise", from the pattern table
	Tool     string
	Where    string // the surface that matched: name, description, inputSchema
}

// RecordMatch is one match of the name-threat method (PROFILE §7.5).
type RecordMatch struct {
	Code     string
	Severity string
	Pattern  string
	Field    string
}

// PriorLabel is the earlier label a continuity label compares against.
type PriorLabel struct {
	ID               string
	DigestSRI        string // SRI of the secured prior label document
	ObservedAt       time.Time
	SubjectDigestSRI string // the prior label's verifiedWork.digestSRI
	ToolSetDigest    string // the prior label's toolSet.digestSRI; empty if it had none
}

// LabelInput is everything a label states. Which method-specific members
// are read depends on the method.
type LabelInput struct {
	IssuerDID  string
	IssuerName string    // optional
	ID         string    // optional; a random urn:uuid when empty
	ObservedAt time.Time // when the tool set was retrieved
	IssuedAt   time.Time // validFrom and the proof's created time

	Subject  Ref // verifiedWork: subject URN and subject descriptor SRI
	ToolSet  ToolSet
	Server   Server
	Evidence []Evidence // appended after the entries the method requires

	// Verdict, when set, must be the verdict the facts below imply; it lets
	// a caller assert what it expects instead of trusting the builder.
	Verdict string

	Reasons        []Reason // why a tool set was not digestible (observation, continuity)
	PatternSet     Ref
	PatternMatches []PatternMatch
	RecordSet      Ref
	RecordMatches  []RecordMatch
	Prior          *PriorLabel
	UnchangedSince time.Time // continuity pass; Prior.ObservedAt when zero
}

// VerdictError reports a verdict the method does not allow or the facts do
// not support (MTL-METH-002).
type VerdictError struct {
	Method    string
	Verdict   string
	Supported string // what the facts imply
}

func (e *VerdictError) Error() string {
	return fmt.Sprintf("%s: verdict %q not permitted for %s (the facts give %q)", CodeVerdictInvalid, e.Verdict, e.Method, e.Supported)
}

// ErrInput is wrapped by every error about a missing or malformed input.
var ErrInput = errors.New("invalid label input")

func inputErr(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInput, fmt.Sprintf(format, args...))
}

var subjectURN = regexp.MustCompile(`^urn:awr:mtl:1:subject:sha256:[0-9a-f]{64}$`)

// forbiddenWords may never describe a server in label text (DESIGN
// "words"): a label records what was observed, never a judgement of worth.
var forbiddenWords = regexp.MustCompile(`(?i)\b(safe|secure|audited|certified|approved|trusted|verified)\b`)

// ForbiddenWord returns the first forbidden word in s, or "".
func ForbiddenWord(s string) string { return forbiddenWords.FindString(s) }

// BuildLabel returns the unsigned label document for method. The verdict
// follows from the inputs by the method's rules, so a verdict the profile
// forbids (observation "fail", a scan "pass" with matches) cannot be built.
func BuildLabel(method string, in LabelInput) (map[string]any, error) {
	build, ok := builders[method]
	if !ok {
		return nil, inputErr("unknown method %q", method)
	}
	if err := checkCommon(in); err != nil {
		return nil, err
	}
	verdict, detail, evidence, err := build(in)
	if err != nil {
		return nil, err
	}
	if err := checkVerdict(method, verdict, in.Verdict); err != nil {
		return nil, err
	}
	for _, e := range in.Evidence {
		evidence = append(evidence, e.json())
	}
	return envelope(method, in, verdict, detail, evidence)
}

// IssueLabel builds and signs a label with key, whose did:key becomes the
// issuer when in.IssuerDID is empty. It returns the signed JCS bytes.
func IssueLabel(method string, in LabelInput, key ed25519.PrivateKey) ([]byte, error) {
	if len(key) != ed25519.PrivateKeySize {
		return nil, errors.New("issuing label: not an Ed25519 private key")
	}
	if in.IssuerDID == "" {
		in.IssuerDID = DIDKey(key.Public().(ed25519.PublicKey))
	}
	doc, err := BuildLabel(method, in)
	if err != nil {
		return nil, fmt.Errorf("issuing label: %w", err)
	}
	signed, err := Sign(doc, key, in.IssuedAt)
	if err != nil {
		return nil, fmt.Errorf("issuing label: %w", err)
	}
	return signed, nil
}

func checkVerdict(method, derived, asked string) error {
	if asked != "" && asked != derived {
		return &VerdictError{Method: method, Verdict: asked, Supported: derived}
	}
	if !slices.Contains(AllowedVerdicts[method], derived) {
		return &VerdictError{Method: method, Verdict: derived, Supported: derived}
	}
	return nil
}

func checkCommon(in LabelInput) error {
	if _, err := ParseDIDKey(in.IssuerDID); err != nil {
		return inputErr("issuer: %v", err)
	}
	if in.ObservedAt.IsZero() || in.IssuedAt.IsZero() {
		return inputErr("observedAt and issuedAt are required")
	}
	if !subjectURN.MatchString(in.Subject.ID) || !mtl.ValidSRI(in.Subject.DigestSRI) {
		return inputErr("subject must be an MTL/1 subject URN and a sha256 SRI")
	}
	if in.Server.Name == "" || in.Server.Registry == "" {
		return inputErr("server name and registry are required")
	}
	if in.ToolSet.Count < 0 || (in.ToolSet.DigestSRI != "" && !mtl.ValidSRI(in.ToolSet.DigestSRI)) {
		return inputErr("tool set needs a non-negative count and, if any, a sha256 SRI")
	}
	for _, r := range in.Reasons {
		if r.Code == "" || r.Detail == "" || ForbiddenWord(r.Detail) != "" {
			return inputErr("reason %q needs a code and a detail free of judgement words", r.Code)
		}
	}
	return nil
}

// envelope wraps a credentialSubject in the AWR/2 VerificationVerdict and
// MCPTrustLabel document shape HISTOR issues.
func envelope(method string, in LabelInput, verdict string, detail map[string]any, evidence []any) (map[string]any, error) {
	id := in.ID
	if id == "" {
		var err error
		if id, err = NewID(); err != nil {
			return nil, err
		}
	}
	issuer := map[string]any{"id": in.IssuerDID}
	if in.IssuerName != "" {
		issuer["name"] = in.IssuerName
	}
	detail["profile"] = "MTL/1"
	detail["reproducibility"] = "deterministic"
	return map[string]any{
		"@context":   []any{VCContext, AWRContext, MTLContext},
		"id":         id,
		"type":       []any{"VerifiableCredential", VerdictDoc, LabelType},
		"issuer":     issuer,
		"validFrom":  FormatTime(in.IssuedAt),
		"awrVersion": AWRVersion,
		"credentialSubject": map[string]any{
			"verifiedWork":  map[string]any{"id": in.Subject.ID, "digestSRI": in.Subject.DigestSRI},
			"verdict":       verdict,
			"method":        map[string]any{"id": method, "name": methodNames[method]},
			"evidence":      evidence,
			"mcpTrustLabel": detail,
		},
	}, nil
}

func (e Evidence) json() map[string]any {
	m := map[string]any{}
	for k, v := range map[string]string{"kind": e.Kind, "id": e.ID, "digestSRI": e.DigestSRI, "value": e.Value} {
		if v != "" {
			m[k] = v
		}
	}
	return m
}

func (s Server) json() map[string]any {
	return map[string]any{"name": s.Name, "registry": s.Registry}
}

func (t ToolSet) json() map[string]any {
	m := map[string]any{"count": t.Count}
	if t.DigestSRI != "" {
		m["digestSRI"] = t.DigestSRI
	}
	return m
}

func (r Ref) json() map[string]any {
	return map[string]any{"id": r.ID, "digestSRI": r.DigestSRI}
}

func reasonsJSON(rs []Reason) []any {
	out := make([]any, 0, len(rs))
	for _, r := range rs {
		out = append(out, map[string]any{"code": r.Code, "detail": r.Detail})
	}
	return out
}

func evidenceEntry(kind, sri string) map[string]any {
	return map[string]any{"kind": kind, "digestSRI": sri}
}

// baseEvidence cites the subject descriptor and, when there is one, the
// digested tool set.
func baseEvidence(in LabelInput) []any {
	ev := []any{evidenceEntry("mtl-subject-descriptor", in.Subject.DigestSRI)}
	if in.ToolSet.DigestSRI != "" {
		ev = append(ev, evidenceEntry("mtl-tool-set", in.ToolSet.DigestSRI))
	}
	return ev
}

// baseDetail holds the mcpTrustLabel members every method restates.
func baseDetail(in LabelInput, scope string) map[string]any {
	return map[string]any{
		"observedAt": FormatTime(in.ObservedAt),
		"server":     in.Server.json(),
		"toolSet":    in.ToolSet.json(),
		"scope":      scope,
	}
}

func checkSetRef(name string, r Ref) error {
	if strings.TrimSpace(r.ID) == "" || !mtl.ValidSRI(r.DigestSRI) {
		return inputErr("%s needs an id and a sha256 SRI (MTL-PSET-001)", name)
	}
	return nil
}
