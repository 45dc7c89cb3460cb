package awr

import (
	"crypto/ed25519"
	"errors"
	"reflect"
	"regexp"
	"slices"
	"time"

	"github.com/histor-observer/histor/log/canon"
)

// AWR/2 envelope constants (SPEC §3.1).
const (
	VCContext  = "https://www.w3.org/ns/credentials/v2"
	AWRContext = "https://verify.modelmarket.dev/ns/awr/v2"
	AWRVersion = "2.0.0"
)

// awrTypes are the AWR/2 document types; a document names exactly one.
var awrTypes = []string{"WorkReceipt", "VerificationVerdict", "BlameAttestation"}

var (
	timeRE       = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$`)
	absoluteURI  = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.\-]*:[^\s]+$`)
	awrVersionRE = regexp.MustCompile(`^2\.(0|[1-9]\d*)\.(0|[1-9]\d*)$`)
)

// Verified is what a verified document says, read after its proof checked.
type Verified struct {
	ID        string
	Issuer    string // the issuer's did:key
	PublicKey ed25519.PublicKey
	Types     []string
	ValidFrom time.Time
	Created   time.Time      // the proof's creation time
	Document  map[string]any // the whole signed document as canon.Parse reads it
	JCS       []byte         // its RFC 8785 form: the bytes a log entry holds
}

// Verify checks an AWR/2 document signed with an eddsa-jcs-2022 proof. The
// bytes go through the strict canonical parser; the envelope must be AWR/2
// (SPEC §3.1); the proof must be exactly one DataIntegrityProof,
// eddsa-jcs-2022, assertionMethod, whose verificationMethod is the issuer's
// did:key URL and whose @context, if present, equals the document's. A
// document that breaks a rule gets a *FormatError; a well-formed one whose
// signature fails gets a *SignatureError.
func Verify(signed []byte) (*Verified, error) {
	doc, err := parseDocument(signed)
	if err != nil {
		return nil, err
	}
	out, err := checkEnvelope(doc)
	if err != nil {
		return nil, err
	}
	if out.PublicKey, err = ParseDIDKey(out.Issuer); err != nil {
		return nil, err
	}
	proof, sig, err := checkProof(doc, out)
	if err != nil {
		return nil, err
	}
	msg, err := hashData(doc, proof)
	if err != nil {
		return nil, &FormatError{Code: canon.CodeSyntax, Reason: "canonicalizing", Err: err}
	}
	if !ed25519.Verify(out.PublicKey, msg, sig) {
		return nil, &SignatureError{ID: out.ID, Issuer: out.Issuer}
	}
	if out.JCS, err = canon.Encode(doc); err != nil {
		return nil, &FormatError{Code: canon.CodeSyntax, Reason: "canonicalizing", Err: err}
	}
	out.Document = doc
	return out, nil
}

func parseDocument(b []byte) (map[string]any, error) {
	v, err := canon.Parse(b)
	if err != nil {
		code := canon.CodeSyntax
		var ce *canon.Error
		if errors.As(err, &ce) {
			code = ce.Code
		}
		return nil, &FormatError{Code: code, Reason: "parsing document", Err: err}
	}
	doc, ok := v.(map[string]any)
	if !ok {
		return nil, formatErr(CodeNotObject, "document is not a JSON object")
	}
	return doc, nil
}

// checkEnvelope applies AWR/2 §3.1 and returns what the rest needs.
func checkEnvelope(doc map[string]any) (*Verified, error) {
	if err := checkContext(doc["@context"]); err != nil {
		return nil, err
	}
	out := &Verified{}
	var ok bool
	if out.ID, ok = doc["id"].(string); !ok || !absoluteURI.MatchString(out.ID) {
		return nil, formatErr(CodeID, "id missing or not an absolute URI")
	}
	var err error
	if out.Types, err = checkTypes(doc["type"]); err != nil {
		return nil, err
	}
	issuer, _ := doc["issuer"].(map[string]any)
	if out.Issuer, ok = issuer["id"].(string); !ok || out.Issuer == "" {
		// AWR/2 rejects the bare-string issuer VC 2.0 would allow.
		return nil, formatErr(CodeIssuer, "issuer must be an object with a non-empty id")
	}
	if out.ValidFrom, err = checkTimes(doc); err != nil {
		return nil, err
	}
	if v, _ := doc["awrVersion"].(string); !awrVersionRE.MatchString(v) {
		return nil, formatErr(CodeVersion, "awrVersion %q is not an AWR/2 semantic version", quoted(v))
	}
	if _, ok := doc["credentialSubject"].(map[string]any); !ok {
		return nil, formatErr(CodeSubject, "credentialSubject missing or not a single object")
	}
	return out, nil
}

func checkContext(v any) error {
	ctx, ok := v.([]any)
	if !ok || len(ctx) == 0 || ctx[0] != VCContext {
		return formatErr(CodeContext, "@context must be an array starting with %s", VCContext)
	}
	if !slices.Contains(ctx, any(AWRContext)) {
		return formatErr(CodeAWRContext, "@context lacks %s", AWRContext)
	}
	return nil
}

func checkTypes(v any) ([]string, error) {
	raw, ok := v.([]any)
	if !ok {
		return nil, formatErr(CodeType, "type must be an array")
	}
	types := make([]string, 0, len(raw))
	awr := 0
	for _, t := range raw {
		s, ok := t.(string)
		if !ok || slices.Contains(types, s) {
			return nil, formatErr(CodeDocType, "type must be a set of strings")
		}
		if slices.Contains(awrTypes, s) {
			awr++
		}
		types = append(types, s)
	}
	if !slices.Contains(types, "VerifiableCredential") {
		return nil, formatErr(CodeType, "type lacks VerifiableCredential")
	}
	if awr != 1 {
		return nil, formatErr(CodeDocType, "type must name exactly one AWR document type, found %d", awr)
	}
	return types, nil
}

// checkTimes reads validFrom and checks validUntil, when present, is later.
func checkTimes(doc map[string]any) (time.Time, error) {
	from, ok := parseTime(doc["validFrom"])
	if !ok {
		return time.Time{}, formatErr(CodeValidFrom, "validFrom missing or not an RFC 3339 UTC time")
	}
	if u, present := doc["validUntil"]; present {
		until, ok := parseTime(u)
		if !ok || !until.After(from) {
			return time.Time{}, formatErr(CodeValidFrom, "validUntil malformed or not later than validFrom")
		}
	}
	return from, nil
}

func parseTime(v any) (time.Time, bool) {
	s, ok := v.(string)
	if !ok || !timeRE.MatchString(s) {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	return t, err == nil
}

// checkProof applies vc-di-eddsa §3.3 and AWR/2 §6 to the proof and returns
// it with its decoded signature.
func checkProof(doc map[string]any, out *Verified) (map[string]any, []byte, error) {
	raw, present := doc["proof"]
	if !present {
		return nil, nil, formatErr(CodeProofMissing, "proof is missing")
	}
	proof, ok := raw.(map[string]any)
	if !ok {
		// A proof set (array) is refused: a label carries exactly one proof.
		return nil, nil, formatErr(CodeProofMissing, "proof must be a single object")
	}
	for k := range proof {
		if !slices.Contains(proofMembers, k) {
			return nil, nil, formatErr(CodeProofMember, "proof member %q is not understood", quoted(k))
		}
	}
	if err := checkProofOptions(doc, proof, out); err != nil {
		return nil, nil, err
	}
	sig, err := decodeProofValue(proof["proofValue"])
	return proof, sig, err
}

func checkProofOptions(doc, proof map[string]any, out *Verified) error {
	if proof["type"] != ProofType {
		return formatErr(CodeProofType, "proof.type must be %s", ProofType)
	}
	if proof["cryptosuite"] != Cryptosuite {
		return formatErr(CodeCryptosuite, "cryptosuite must be %s", Cryptosuite)
	}
	if proof["proofPurpose"] != ProofPurpose {
		return formatErr(CodeProofPurpose, "proofPurpose must be %s", ProofPurpose)
	}
	if proof["verificationMethod"] != VerificationMethod(out.Issuer) {
		return formatErr(CodeVerification, "verificationMethod must be %s", VerificationMethod(out.Issuer))
	}
	// W3C lets the document's @context merely start with the proof's; AWR/2
	// §6.3 (AWR-PROOF-008) asks for the same value, which is stricter.
	if ctx, ok := proof["@context"]; ok && !reflect.DeepEqual(ctx, doc["@context"]) {
		return formatErr(CodeProofContext, "proof.@context differs from the document @context")
	}
	created, ok := parseTime(proof["created"])
	if !ok {
		return formatErr(CodeProofCreated, "proof.created missing or not an RFC 3339 UTC time")
	}
	out.Created = created
	return nil
}

func decodeProofValue(v any) ([]byte, error) {
	s, ok := v.(string)
	if !ok || len(s) < 2 || s[0] != 'z' {
		return nil, formatErr(CodeProofValue, "proofValue must be a multibase base58btc string ('z…')")
	}
	sig, err := base58Decode(s[1:])
	if err != nil || len(sig) != ed25519.SignatureSize {
		return nil, formatErr(CodeProofValue, "proofValue does not decode to a %d-byte signature", ed25519.SignatureSize)
	}
	return sig, nil
}
