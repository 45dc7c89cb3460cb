package mtl

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/histor-observer/histor/log/canon"
)

const (
	vectorToolsSRI   = "sha256-9+Gp1Oq15KPBAAGmFucoVwSQ/PUzwLt1CRxesSUvX5c="
	vectorSubjectSRI = "sha256-nNR6utZJHl/EpVoffkzaYj4kA7LbJOig5Yz91lk6k1s="
	vectorSubjectURN = "urn:awr:mtl:1:subject:sha256:9cd47abad6491e5fc4a55a1f7e4cda623e2403b2db24e8a0e58cfdd6593a935b"
)

func readVector(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "mtl1", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestVectorToolSetDigest(t *testing.T) {
	got, err := DigestListResult(readVector(t, "pass-01-tools.json"))
	if err != nil {
		t.Fatal(err)
	}
	if got != vectorToolsSRI {
		t.Errorf("tool-set digest = %s, want %s", got, vectorToolsSRI)
	}
}

func TestVectorSubjectDescriptor(t *testing.T) {
	jcs, err := canon.Canonicalize(readVector(t, "pass-01-subject-descriptor.json"))
	if err != nil {
		t.Fatal(err)
	}
	if got := SubjectDigest(jcs); got != vectorSubjectSRI {
		t.Errorf("SubjectDigest = %s, want %s", got, vectorSubjectSRI)
	}
	if got := SubjectURN(jcs); got != vectorSubjectURN {
		t.Errorf("SubjectURN = %s, want %s", got, vectorSubjectURN)
	}
}

// TestVectorBuild builds the worked example's descriptor from its tool set
// and the server facts, and must land on the same subject.
func TestVectorBuild(t *testing.T) {
	tools, err := ToolSetFromListResult(readVector(t, "pass-01-tools.json"))
	if err != nil {
		t.Fatal(err)
	}
	d, hazard, err := Build(
		Server{Name: "com.example/weather", Registry: "urn:awr:mtl:1:registry:example", Version: "1.4.2"},
		tools,
		Artifact{Transport: "stdio", Package: "npm:@example/weather-mcp@1.4.2"},
	)
	if err != nil || hazard != nil {
		t.Fatalf("Build: %v, hazard %v", err, hazard)
	}
	sri, urn, err := d.Subject()
	if err != nil {
		t.Fatal(err)
	}
	if sri != vectorSubjectSRI || urn != vectorSubjectURN {
		t.Errorf("Subject = %s %s, want %s %s", sri, urn, vectorSubjectSRI, vectorSubjectURN)
	}
	want, _ := canon.Canonicalize(readVector(t, "pass-01-subject-descriptor.json"))
	if got, _ := d.JCS(); string(got) != string(want) {
		t.Errorf("JCS = %s\nwant  %s", got, want)
	}
}
