package log

// Evidence kinds: the content-addressed stores beside the labels. Each is also the path
// segment HISTOR serves its bodies under, /api/v1/<kind>/<sri>.
const (
	EvidenceToolSets    = "toolsets"
	EvidenceDescriptors = "descriptors"
	EvidencePatternSets = "pattern-sets"
	EvidenceRecordSets  = "record-sets"
	// EvidenceBehaviour holds what a package did in the sandbox: the
	// observation without its tools (those are a tool set), never a verdict.
	EvidenceBehaviour = "behaviour"
)

var evidenceKinds = map[string]bool{
	EvidenceToolSets: true, EvidenceDescriptors: true, EvidencePatternSets: true, EvidenceRecordSets: true,
	EvidenceBehaviour: true,
}

// EvidenceKinds lists every evidence kind the log stores.
func EvidenceKinds() []string {
	return []string{EvidenceToolSets, EvidenceDescriptors, EvidencePatternSets, EvidenceRecordSets, EvidenceBehaviour}
}

// IsEvidenceKind reports whether kind is one of EvidenceKinds.
func IsEvidenceKind(kind string) bool { return evidenceKinds[kind] }
