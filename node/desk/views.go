package desk

// The view models: what each page shows, already in words and strings, so
// the templates hold no logic beyond loops and conditions.

// ServersView is the servers list (/, /servers).
type ServersView struct {
	Query  string
	State  string // the filter in force, "all" by default
	States []Option
	Total  int
	// From and To number the rows shown, 1-based; both 0 when none.
	From, To int
	Rows     []ServerRow
	// PrevURL and NextURL are the neighbouring pages, "" at an end.
	PrevURL, NextURL string
	// Error says why the query was refused; Rows is then empty.
	Error string
}

// Option is one choice of a select control.
type Option struct {
	Value, Label string
	Selected     bool
}

// ServerRow is one server in the list.
type ServerRow struct {
	ID, Name, Title, Endpoint string
	State                     string // unchanged, pinned, changed, unknown
	StateText                 string // the badge's words, with their date
	LastObserved              string // "" when never
	ToolCount                 string // "—" when no tool set is on record
	Changed                   bool   // shown with the amber marker
}

// ServerView is one server's page (/s/<id>).
type ServerView struct {
	ServerRow
	Transport, Version, Description string
	ToolSetDigest, Subject          string
	FirstPinned, UnchangedSince     string
	Observations, Attempts          int
	LastStatus, LastDetail          string
	Delisted                        bool
	Tools                           []Tool
	// Matches are every pattern match of the current tool set, also the
	// ones outside a tool (the server's instructions).
	Matches   []Match
	Labels    []Label
	Timeline  []Span
	Changes   []Change
	Observers []Observer
	Agreement Agreement
	Badge     Badge
	// Package is a package server's sandbox runs; nil for an endpoint.
	Package *PackageRuns
}

// PackageRuns is what the sandbox recorded of a package server: its last
// run and every version observed. A record of what happened, never a
// verdict.
type PackageRuns struct {
	Key      string
	Last     *PackageRun
	Versions []PackageRun
}

// PackageRun is one run of one version.
type PackageRun struct {
	Package, Version, Status, Detail, ObservedAt string
	Runtime, RootDigest                          string
	CallsOK, CallsTotal, CallsSkipped            int
	Complete                                     bool
	BehaviourURL                                 string
	Provenance, Publisher                        string
	Signals                                      []string
}

// Tool is one tool as observed.
type Tool struct {
	Name        string
	Description []Segment // the text, with pattern matches marked
	Schema      string    // inputSchema, indented JSON
	Output      string    // outputSchema, indented JSON; "" when none
	Matches     []Match
}

// Segment is a run of text, marked when a pattern matched it.
type Segment struct {
	Text string
	Mark bool
}

// Match is one pattern match: what rule, how severe, where.
type Match struct {
	Code, Severity, Tier, Tool, Where, Span string
}

// Label is one entry of the label timeline.
type Label struct {
	ID, Method, Verdict, ObservedAt, IssuedAt, URL string
	LeafIndex                                      uint64
}

// Span is one row of the observation timeline.
type Span struct {
	From, Until, Status, Detail, ToolSetDigest, ToolCount string
	Count                                                 int
}

// Change is one change of a server's tool definitions.
type Change struct {
	ID                     int64
	URL                    string // the change page
	ServerID, Name         string
	ObservedAt             string
	FromToolSet, ToToolSet string
	Added, Removed         []string
	Renamed                []string // "old → new"
	Modified               []ToolDiff
	NewAddresses           []string
	NamesOnly              bool
	SerializationOnly      bool
	LabelID, LabelURL      string
}

// ToolDiff is what changed in one tool.
type ToolDiff struct {
	Tool   string
	Fields []FieldDiff
}

// FieldDiff is one changed member: a word diff for text, a list of JSON
// paths for schemas.
type FieldDiff struct {
	Field string
	Words []WordRun
	Paths []string
}

// WordRun is one run of a word diff: Op is "=", "-" or "+".
type WordRun struct{ Op, Text string }

// Observer is what one observer of the federation saw of a server.
type Observer struct {
	DID, Digest, Status, ObservedAt, LabelID string
	LeafIndex, HeadSize                      uint64
	Self                                     bool
	// Differs marks an observer whose digest is not this node's own
	// (shown in amber, as a change is).
	Differs bool
}

// Agreement is the peer view's status for a server.
type Agreement struct {
	Status string // unanimous, split, single-observer, unobserved; "" without a view
	Text   string // the status in words
	Split  bool
}

// Badge is the snippet a server's author can copy.
type Badge struct {
	SVGURL, PageURL, Markdown, HTML, Alt string
}

// ChangesView is the changes list (/changes).
type ChangesView struct {
	Changes []Change
	NextURL string // older changes, "" at the end
}

// ChangeView is one change's page (/changes/<id>).
type ChangeView struct {
	Change Change
}

// CheckView is the check form (/check) and, after a POST, its answer.
type CheckView struct {
	Endpoint, Name, Tools string // the form's values, shown again
	Error                 string // why the request was refused
	Answered              bool
	Answer                CheckAnswer
}

// CheckAnswer is the signed answer to a check, in words and in full.
type CheckAnswer struct {
	Match, Note string
	Digest      string
	Known       string // what the observer knows of the server
	TargetURL   string // its page, "" when not listed
	Agreement   Agreement
	Observers   []Observer
	Signed      string // the signed JSON, indented for reading
}

// NetworkView is the observers of the federation (/network).
type NetworkView struct {
	Self      NetworkObserver
	Observers []NetworkObserver
	Witnessed []string // the origins this node's witness cosigns
	Evidence  []Evidence
	Policy    string // the witness policy in words; "" when none applies
}

// NetworkObserver is one observer's log as this node last checked it.
type NetworkObserver struct {
	DID, Origin string
	HeadSize    uint64
	HeadTime    string
	Cosigners   []string
	Forked      bool   // this node holds evidence its log forked
	Clock       string // how far its clock is from this node's, when measured
}

// Evidence is one equivocation bundle this node holds.
type Evidence struct {
	ID, Origin, Kind, Seen, URL string
}

// AboutView is the about page; it shows the node's own names.
type AboutView struct {
	Origin, DID, PublicURL string
}
