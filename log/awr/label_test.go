package awr

import (
	"bytes"
	"errors"
	"regexp"
	"testing"
	"time"

	"github.com/histor-observer/histor/log/canon"
)

// Facts of the MTL/1 worked example (testdata vectors).
const (
	exSubjectURN = "urn:awr:mtl:1:subject:sha256:9cd47abad6491e5fc4a55a1f7e4cda623e2403b2db24e8a0e58cfdd6593a935b"
	exSubjectSRI = "sha256-nNR6utZJHl/EpVoffkzaYj4kA7LbJOig5Yz91lk6k1s="
	exToolSetSRI = "sha256-9+Gp1Oq15KPBAAGmFucoVwSQ/PUzwLt1CRxesSUvX5c="
	exPatternSRI = "sha256-b+YfQU2xqvvgbRooGS9fo9j/jeN6nGJvbMWF9ixUwCI="
	exPriorSRI   = "sha256-PzxZSsPOg+8A0jjutPHpX6ULjxR3pjvxOOU5C1hfiU8="
	otherSRI     = "sha256-47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU="
	exIssuerName = "mtl-demo-scanner (DEMONSTRATION KEY — SEED PUBLISHED, NOT AN ADOPTER)"
)

func exampleInput() LabelInput {
	return LabelInput{
		IssuerDID:  demoDID,
		IssuerName: exIssuerName,
		ObservedAt: time.Date(2026, 7, 30, 9, 0, 0, 0, time.UTC),
		IssuedAt:   time.Date(2026, 7, 30, 9, 15, 0, 0, time.UTC),
		Subject:    Ref{ID: exSubjectURN, DigestSRI: exSubjectSRI},
		ToolSet:    ToolSet{Count: 2, DigestSRI: exToolSetSRI},
		Server:     Server{Name: "com.example/weather", Registry: "urn:awr:mtl:1:registry:example"},
		PatternSet: Ref{ID: "urn:awr:mtl:1:patternset:argus-warden-static-scan", DigestSRI: exPatternSRI},
		RecordSet:  Ref{ID: "urn:awr:mtl:1:recordset:argus-warden-builtin", DigestSRI: otherSRI},
		Prior: &PriorLabel{
			ID:               "urn:uuid:c41f88a0-52d7-4b16-9e3f-0d6a7c8b2e14",
			DigestSRI:        exPriorSRI,
			ObservedAt:       time.Date(2026, 7, 24, 8, 0, 0, 0, time.UTC),
			SubjectDigestSRI: exSubjectSRI,
			ToolSetDigest:    exToolSetSRI,
		},
	}
}

// withoutProse drops the members whose wording is the issuer's own (scope,
// and the vectors' demonstration notice) so shapes can be compared.
func withoutProse(t *testing.T, doc map[string]any) []byte {
	t.Helper()
	b, err := canon.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	v, _ := canon.Parse(b)
	m := v.(map[string]any)
	delete(m, "proof")
	label := m["credentialSubject"].(map[string]any)["mcpTrustLabel"].(map[string]any)
	delete(label, "scope")
	delete(label, "demonstration")
	out, err := canon.Encode(m)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestBuildMatchesVectorShape builds the two vector labels from their facts:
// apart from the prose, the documents must be identical.
func TestBuildMatchesVectorShape(t *testing.T) {
	cases := []struct {
		method, file, id string
	}{
		{MethodPatternScan, vectorFiles[0], "urn:uuid:9f2c1d84-6b3a-4e51-8f07-2a5c9d1e4b60"},
		{MethodContinuity, vectorFiles[1], "urn:uuid:7a05e6c3-19bd-4a72-8c58-b3e91f240dda"},
	}
	for _, c := range cases {
		in := exampleInput()
		in.ID = c.id
		in.Verdict = VerdictPass
		doc, err := BuildLabel(c.method, in)
		if err != nil {
			t.Fatalf("%s: %v", c.method, err)
		}
		v, err := canon.Parse(readVector(t, c.file))
		if err != nil {
			t.Fatal(err)
		}
		got, want := withoutProse(t, doc), withoutProse(t, v.(map[string]any))
		if !bytes.Equal(got, want) {
			t.Errorf("%s:\n got %s\nwant %s", c.method, got, want)
		}
	}
}

type labelCase struct {
	name    string
	method  string
	edit    func(*LabelInput)
	verdict string
}

var labelCases = []labelCase{
	{"observation pass", MethodObservation, func(*LabelInput) {}, VerdictPass},
	{"observation no digest", MethodObservation, func(in *LabelInput) {
		in.ToolSet.DigestSRI = ""
		in.Reasons = []Reason{{Code: "MTL-NUM-001", Detail: "tool get_weather: a number with a fraction"}}
	}, VerdictInconclusive},
	{"observation with pin", MethodObservation, func(in *LabelInput) {
		in.Evidence = []Evidence{{Kind: "argus-tool-pin", Value: "abc123"}}
	}, VerdictPass},
	{"scan clean", MethodPatternScan, func(*LabelInput) {}, VerdictPass},
	{"scan matched", MethodPatternScan, func(in *LabelInput) {
		in.PatternMatches = []PatternMatch{
			{Code: "TOOL_DEF_CREDENTIAL_PARAM", Severity: "low", Tier: "advise", Tool: "create_issue", Where: "inputSchema"},
			{Code: "TOOL_DEF_IMPERATIVE", Severity: "info", Tier: "advise", Tool: "list_files", Where: "description"},
		}
	}, VerdictInconclusive},
	{"continuity same", MethodContinuity, func(*LabelInput) {}, VerdictPass},
	{"continuity changed", MethodContinuity, func(in *LabelInput) { in.Subject.DigestSRI = otherSRI }, VerdictFail},
	{"continuity no digest now", MethodContinuity, func(in *LabelInput) { in.ToolSet.DigestSRI = "" }, VerdictInconclusive},
	{"continuity no digest before", MethodContinuity, func(in *LabelInput) { in.Prior.ToolSetDigest = "" }, VerdictInconclusive},
	{"name clean", MethodNameThreat, func(*LabelInput) {}, VerdictPass},
	{"name matched", MethodNameThreat, func(in *LabelInput) {
		in.RecordMatches = []RecordMatch{{Code: "TYPOSQUAT", Severity: "medium", Pattern: "weathr", Field: "name"}}
	}, VerdictInconclusive},
}

func (c labelCase) input() LabelInput {
	in := exampleInput()
	p := *in.Prior
	in.Prior = &p
	c.edit(&in)
	return in
}

// TestLabelRoundTrip issues every case with the demo key and reads it back.
func TestLabelRoundTrip(t *testing.T) {
	for _, c := range labelCases {
		t.Run(c.name, func(t *testing.T) {
			signed, err := IssueLabel(c.method, c.input(), demoKey())
			if err != nil {
				t.Fatal(err)
			}
			v, err := Verify(signed)
			if err != nil {
				t.Fatalf("own label does not verify: %v", err)
			}
			cs := v.Document["credentialSubject"].(map[string]any)
			if cs["verdict"] != c.verdict {
				t.Errorf("verdict %v, want %s", cs["verdict"], c.verdict)
			}
			if cs["method"].(map[string]any)["id"] != c.method {
				t.Errorf("method %v", cs["method"])
			}
			if _, ok := cs["score"]; ok {
				t.Error("label carries a score")
			}
			if !idRE.MatchString(v.ID) {
				t.Errorf("id %s is not a v4 urn:uuid", v.ID)
			}
		})
	}
}

var idRE = regexp.MustCompile(`^urn:uuid:[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

// TestLabelWords scans every string every builder writes for the words a
// label may never use about a server.
func TestLabelWords(t *testing.T) {
	for _, c := range labelCases {
		doc, err := BuildLabel(c.method, c.input())
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		walkStrings(doc, func(s string) {
			if w := ForbiddenWord(s); w != "" {
				t.Errorf("%s: %q says %q", c.name, s, w)
			}
		})
	}
}

func TestForbiddenWordFinds(t *testing.T) {
	for _, s := range []string{"this server is Safe", "SECURE server", "verified.", "(trusted)", "approved", "audited", "certified"} {
		if ForbiddenWord(s) == "" {
			t.Errorf("ForbiddenWord missed %q", s)
		}
	}
	for _, s := range []string{"safety", "unsafe", "VerificationVerdict", "verifiedWork"} {
		if w := ForbiddenWord(s); w != "" {
			t.Errorf("ForbiddenWord(%q) = %q", s, w)
		}
	}
}

func walkStrings(v any, f func(string)) {
	switch x := v.(type) {
	case string:
		f(x)
	case map[string]any:
		for _, e := range x {
			walkStrings(e, f)
		}
	case []any:
		for _, e := range x {
			walkStrings(e, f)
		}
	}
}

func TestVerdictRules(t *testing.T) {
	cases := []struct {
		name, method, asked string
		edit                func(*LabelInput)
	}{
		{"observation fail", MethodObservation, VerdictFail, func(*LabelInput) {}},
		{"scan fail", MethodPatternScan, VerdictFail, func(*LabelInput) {}},
		{"name fail", MethodNameThreat, VerdictFail, func(*LabelInput) {}},
		{"scan pass with a match", MethodPatternScan, VerdictPass, func(in *LabelInput) {
			in.PatternMatches = []PatternMatch{{Code: "X", Severity: "low", Tier: "advise", Tool: "t", Where: "name"}}
		}},
		{"scan pass over unread text", MethodPatternScan, VerdictPass, func(in *LabelInput) {
			in.Reasons = []Reason{{Code: "HISTOR-SCAN-001", Detail: "a scan bound was reached"}}
		}},
		{"continuity pass on change", MethodContinuity, VerdictPass, func(in *LabelInput) { in.Subject.DigestSRI = otherSRI }},
		{"continuity fail without digest", MethodContinuity, VerdictFail, func(in *LabelInput) { in.ToolSet.DigestSRI = "" }},
		{"observation pass without digest", MethodObservation, VerdictPass, func(in *LabelInput) {
			in.ToolSet.DigestSRI = ""
			in.Reasons = []Reason{{Code: "MTL-SUBJ-002", Detail: "empty tool set"}}
		}},
	}
	for _, c := range cases {
		in := exampleInput()
		c.edit(&in)
		in.Verdict = c.asked
		_, err := BuildLabel(c.method, in)
		var ve *VerdictError
		if !errors.As(err, &ve) {
			t.Errorf("%s: error = %v, want *VerdictError", c.name, err)
		}
	}
}

func TestBuildRefusesBadInput(t *testing.T) {
	cases := map[string]struct {
		method string
		edit   func(*LabelInput)
	}{
		"unknown method":  {"urn:awr:mtl:1:method:vibes", func(*LabelInput) {}},
		"opinion method":  {"urn:awr:mtl:1:opinion:llm", func(*LabelInput) {}},
		"no issuer":       {MethodObservation, func(in *LabelInput) { in.IssuerDID = "" }},
		"web issuer":      {MethodObservation, func(in *LabelInput) { in.IssuerDID = "did:web:example.com" }},
		"no observedAt":   {MethodObservation, func(in *LabelInput) { in.ObservedAt = time.Time{} }},
		"bad subject urn": {MethodObservation, func(in *LabelInput) { in.Subject.ID = "urn:x" }},
		"bad subject sri": {MethodObservation, func(in *LabelInput) { in.Subject.DigestSRI = "sha512-x" }},
		// Each loosely decodes to the right digest but sets unused bits of
		// the last base64 character: not the one spelling SRI writes.
		"loose subject sri":   {MethodObservation, func(in *LabelInput) { in.Subject.DigestSRI = loose(exSubjectSRI) }},
		"loose tool-set sri":  {MethodObservation, func(in *LabelInput) { in.ToolSet.DigestSRI = loose(exToolSetSRI) }},
		"loose prior sri":     {MethodContinuity, func(in *LabelInput) { in.Prior.DigestSRI = loose(exPriorSRI) }},
		"loose pattern sri":   {MethodPatternScan, func(in *LabelInput) { in.PatternSet.DigestSRI = loose(exPatternSRI) }},
		"no server":           {MethodObservation, func(in *LabelInput) { in.Server.Name = "" }},
		"negative count":      {MethodObservation, func(in *LabelInput) { in.ToolSet.Count = -1 }},
		"no digest no reason": {MethodObservation, func(in *LabelInput) { in.ToolSet.DigestSRI = "" }},
		"judging reason": {MethodObservation, func(in *LabelInput) {
			in.Reasons = []Reason{{Code: "MTL-NUM-001", Detail: "otherwise the server looks secure"}}
		}},
		"no pattern set":   {MethodPatternScan, func(in *LabelInput) { in.PatternSet = Ref{} }},
		"no record set":    {MethodNameThreat, func(in *LabelInput) { in.RecordSet.DigestSRI = "" }},
		"no prior":         {MethodContinuity, func(in *LabelInput) { in.Prior = nil }},
		"prior without id": {MethodContinuity, func(in *LabelInput) { in.Prior = &PriorLabel{DigestSRI: exPriorSRI} }},
		"match without tier": {MethodPatternScan, func(in *LabelInput) {
			in.PatternMatches = []PatternMatch{{Code: "X", Tool: "t", Where: "name"}}
		}},
	}
	for name, c := range cases {
		in := exampleInput()
		c.edit(&in)
		if _, err := BuildLabel(c.method, in); !errors.Is(err, ErrInput) {
			t.Errorf("%s: error = %v, want ErrInput", name, err)
		}
	}
}

// loose respells an SRI whose last base64 character has its unused bits
// zero with the next character, which sets one of them.
func loose(sri string) string {
	b := []byte(sri)
	b[len(b)-2]++
	return string(b)
}

func TestIssueLabelRefusesOtherIssuer(t *testing.T) {
	in := exampleInput()
	in.IssuerDID = "did:key:z6MkiTBz1ymuepAQ4HEHYSF1H8quG5GLVVQR3djdX3mDooWp"
	if _, err := IssueLabel(MethodObservation, in, demoKey()); err == nil {
		t.Error("IssueLabel signed a label naming someone else as issuer")
	}
}

func TestNewID(t *testing.T) {
	seen := map[string]bool{}
	for range 1000 {
		id, err := NewID()
		if err != nil {
			t.Fatal(err)
		}
		if !idRE.MatchString(id) {
			t.Fatalf("%s is not a v4 urn:uuid", id)
		}
		if seen[id] {
			t.Fatalf("repeated id %s", id)
		}
		seen[id] = true
	}
}
