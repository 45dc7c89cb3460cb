package awr

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRunVerify(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	b := readVector(t, vectorFiles[0])
	b = bytes.Replace(b, []byte(`"count": 2`), []byte(`"count": 3`), 1)
	if err := os.WriteFile(bad, b, 0o644); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing.json")

	var out, errOut bytes.Buffer
	if code := RunVerify(vectorFiles, &out, &errOut); code != 0 {
		t.Fatalf("vectors: exit %d, output:\n%s", code, out.String())
	}
	want := "ok testdata/pass-01-pattern-scan.awr.json urn:uuid:9f2c1d84-6b3a-4e51-8f07-2a5c9d1e4b60\n" +
		"ok testdata/pass-03-tool-set-continuity.awr.json urn:uuid:7a05e6c3-19bd-4a72-8c58-b3e91f240dda\n"
	if out.String() != want {
		t.Errorf("output:\n%s\nwant:\n%s", out.String(), want)
	}

	out.Reset()
	code := RunVerify([]string{vectorFiles[0], bad, missing}, &out, &errOut)
	if code != 1 {
		t.Errorf("exit %d with a bad file, want 1", code)
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "ok ") ||
		!strings.HasPrefix(lines[1], "FAIL "+bad+": AWR-PROOF-006") || !strings.HasPrefix(lines[2], "FAIL "+missing+":") {
		t.Errorf("output:\n%s", out.String())
	}

	if code := RunVerify(nil, &out, &errOut); code != 2 || errOut.Len() == 0 {
		t.Errorf("no files: exit %d, stderr %q", code, errOut.String())
	}
}

func TestCheckLabelRefuses(t *testing.T) {
	cases := map[string]func(doc, proof map[string]any){
		"observation fail": func(d, _ map[string]any) {
			cs := d["credentialSubject"].(map[string]any)
			cs["method"] = map[string]any{"id": MethodObservation, "name": "x"}
			cs["verdict"] = VerdictFail
		},
		"score": func(d, _ map[string]any) { d["credentialSubject"].(map[string]any)["score"] = "0.5" },
		"unknown method": func(d, _ map[string]any) {
			d["credentialSubject"].(map[string]any)["method"] = map[string]any{"id": "urn:awr:mtl:1:opinion:x"}
		},
		"not a label": func(d, _ map[string]any) { d["type"] = []any{"VerifiableCredential", VerdictDoc} },
		"model-dependent": func(d, _ map[string]any) {
			d["credentialSubject"].(map[string]any)["mcpTrustLabel"].(map[string]any)["reproducibility"] = "model-dependent"
		},
	}
	for name, mutate := range cases {
		b := signMutated(t, name, mutate)
		v, err := Verify(b)
		if err != nil {
			t.Fatalf("%s: signed fixture does not verify: %v", name, err)
		}
		if err := CheckLabel(v); err == nil {
			t.Errorf("%s: CheckLabel accepted it", name)
		}
	}
}
