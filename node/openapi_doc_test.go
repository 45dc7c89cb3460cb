package node

import (
	"encoding/json"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
)

// TestOpenAPIDocumentValid checks the document against the OpenAPI 3.1
// schema with a validator not written here.
func TestOpenAPIDocumentValid(t *testing.T) {
	doc, err := libopenapi.NewDocument(openapiDoc)
	if err != nil {
		t.Fatal(err)
	}
	if v := doc.GetVersion(); v != "3.1.0" {
		t.Fatalf("openapi version %q, want 3.1.0", v)
	}
	v, errs := validator.NewValidator(doc)
	if len(errs) > 0 {
		t.Fatalf("building validator: %v", errs)
	}
	ok, verrs := v.ValidateDocument()
	for _, e := range verrs {
		t.Errorf("%s: %s (%s)", e.ValidationType, e.Message, e.Reason)
		for _, se := range e.SchemaValidationErrors {
			t.Errorf("  at %s: %s", se.FieldPath, se.Reason)
		}
	}
	if !ok {
		t.Fatal("document is not valid OpenAPI 3.1")
	}
}

// TestOpenAPIValidatorRefuses shows the validator above can fail: a
// response that is not an object, and a path parameter left undeclared.
func TestOpenAPIValidatorRefuses(t *testing.T) {
	for name, body := range map[string]string{
		"response not an object": `{"openapi":"3.1.0","info":{"title":"x","version":"1"},"paths":{"/a":{"get":{"responses":{"200":5}}}}}`,
		"no info":                `{"openapi":"3.1.0","paths":{}}`,
	} {
		doc, err := libopenapi.NewDocument([]byte(body))
		if err != nil {
			continue // refused even earlier
		}
		v, errs := validator.NewValidator(doc)
		if len(errs) > 0 {
			continue
		}
		if ok, _ := v.ValidateDocument(); ok {
			t.Errorf("%s: accepted", name)
		}
	}
}

// TestOpenAPIMatchesRoutes compares the document's operations with the
// routes the node registers, both ways, so neither can drift: every
// (method, path) the table serves is described, and nothing described is
// missing from the table. GET covers HEAD; "{x...}" is "{x}" in OpenAPI.
func TestOpenAPIMatchesRoutes(t *testing.T) {
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(openapiDoc, &doc); err != nil {
		t.Fatal(err)
	}
	described := map[string]bool{}
	for path, ops := range doc.Paths {
		for method := range ops {
			described[strings.ToUpper(method)+" "+path] = true
		}
	}
	rest := regexp.MustCompile(`\{([A-Za-z_]+)\.\.\.\}`)
	served := map[string]bool{}
	for _, r := range Routes() {
		path := rest.ReplaceAllString(r.Pattern, "{$1}")
		for _, m := range r.Methods {
			served[m+" "+path] = true
		}
	}
	var missing, extra []string
	for k := range served {
		if !described[k] {
			missing = append(missing, k)
		}
	}
	for k := range described {
		if !served[k] {
			extra = append(extra, k)
		}
	}
	slices.Sort(missing)
	slices.Sort(extra)
	for _, k := range missing {
		t.Errorf("served but not in openapi.json: %s", k)
	}
	for _, k := range extra {
		t.Errorf("in openapi.json but not served: %s", k)
	}
}

// TestOpenAPIServed: the node serves the document it embeds.
func TestOpenAPIServed(t *testing.T) {
	tn := newTestNode(t, 1)
	resp, err := http.Get(tn.srv.URL + "/api/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var v map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil || resp.StatusCode != 200 || v["openapi"] != "3.1.0" {
		t.Fatalf("GET /api/openapi.json: %d, %v, openapi=%v", resp.StatusCode, err, v["openapi"])
	}
}
