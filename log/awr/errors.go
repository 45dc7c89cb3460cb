package awr

import "fmt"

// FormatError reports a document, proof or identifier that is not what
// AWR/2 allows. Code is the AWR/2 (SPEC §11.2) reason code, or an
// AWR-CANON code when the bytes were refused by the strict parser.
type FormatError struct {
	Code   string
	Reason string
	Err    error // the underlying error, when there is one
}

func (e *FormatError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%s: %s: %v", e.Code, e.Reason, e.Err)
	}
	return fmt.Sprintf("%s: %s", e.Code, e.Reason)
}

func (e *FormatError) Unwrap() error { return e.Err }

func formatErr(code, format string, args ...any) *FormatError {
	return &FormatError{Code: code, Reason: fmt.Sprintf(format, args...)}
}

// SignatureError reports a well-formed document whose proof does not
// verify under the issuer's key: the signed bytes were changed, or were
// signed by someone else.
type SignatureError struct {
	ID     string // the document's id, as claimed by the unverified document
	Issuer string
}

func (e *SignatureError) Error() string {
	return fmt.Sprintf("AWR-PROOF-006: Ed25519 signature of %s does not verify under %s", e.ID, e.Issuer)
}

// Reason codes used by this package (AWR/2 SPEC §11.2).
const (
	CodeNotObject      = "AWR-DOC-001"
	CodeContext        = "AWR-DOC-002"
	CodeAWRContext     = "AWR-DOC-003"
	CodeType           = "AWR-DOC-004"
	CodeDocType        = "AWR-DOC-005"
	CodeID             = "AWR-DOC-006"
	CodeValidFrom      = "AWR-DOC-007"
	CodeSubject        = "AWR-DOC-008"
	CodeVersion        = "AWR-DOC-009"
	CodeIssuer         = "AWR-DOC-010"
	CodeNotDIDKey      = "AWR-KEY-001"
	CodeBadDIDKey      = "AWR-KEY-002"
	CodeKeyType        = "AWR-KEY-004"
	CodeProofMissing   = "AWR-PROOF-001"
	CodeProofType      = "AWR-PROOF-002"
	CodeCryptosuite    = "AWR-PROOF-003"
	CodeProofPurpose   = "AWR-PROOF-004"
	CodeProofValue     = "AWR-PROOF-005"
	CodeVerification   = "AWR-PROOF-007"
	CodeProofContext   = "AWR-PROOF-008"
	CodeProofCreated   = "AWR-PROOF-009"
	CodeProofMember    = "HISTOR-PROOF-001" // a proof member this verifier does not know
	CodeVerdictInvalid = "MTL-METH-002"
)
