package sandbox

// Type is the type member of every Observation.
const Type = "histor.package-observation/v1"

// Status says how an observation ended. "ok" is the only status with tools;
// the infrastructure statuses (busy, sandbox-unavailable, inspection-failed)
// say nothing about the package and never become a label about it.
type Status string

// The statuses, HISTOR's names.
const (
	StatusOK                 Status = "ok"
	StatusNotFound           Status = "not-found"
	StatusNoWheel            Status = "no-wheel"
	StatusInstallFailed      Status = "install-failed"
	StatusNoEntryPoint       Status = "no-entry-point"
	StatusExited             Status = "exited"
	StatusTimeout            Status = "timeout"
	StatusProtocol           Status = "protocol"
	StatusTooLarge           Status = "too-large"
	StatusTooManyTools       Status = "too-many-tools"
	StatusTooManyPages       Status = "too-many-pages"
	StatusBusy               Status = "busy"
	StatusSandboxUnavailable Status = "sandbox-unavailable"
	StatusInspectionFailed   Status = "inspection-failed"
	StatusRefused            Status = "refused"
	// StatusPoisoned is ours: a queued job that failed on every one of its
	// deliveries ends here, recorded, instead of being retried forever.
	StatusPoisoned Status = "poisoned"
)

// Known reports whether s is one of the statuses above.
func (s Status) Known() bool {
	switch s {
	case StatusOK, StatusNotFound, StatusNoWheel, StatusInstallFailed, StatusNoEntryPoint, StatusExited,
		StatusTimeout, StatusProtocol, StatusTooLarge, StatusTooManyTools, StatusTooManyPages, StatusBusy,
		StatusSandboxUnavailable, StatusInspectionFailed, StatusRefused, StatusPoisoned:
		return true
	}
	return false
}

// Infrastructure reports whether s describes the sandbox rather than the
// package.
func (s Status) Infrastructure() bool {
	switch s {
	case StatusBusy, StatusSandboxUnavailable, StatusInspectionFailed, StatusPoisoned:
		return true
	}
	return false
}

// Observation is one run of one package version. Optional members are
// omitted, never null.
type Observation struct {
	Type       string  `json:"type"`
	Observer   string  `json:"observer"` // the observer's version, HISTOR's member
	Registry   string  `json:"registry"` // npm | pypi | local
	Name       string  `json:"name"`
	Version    string  `json:"version,omitempty"`
	Package    string  `json:"package,omitempty"` // npm:<name>@<version> or pypi:<name>==<version>: the artifact of the labels
	Integrity  string  `json:"integrity,omitempty"`
	ObservedAt string  `json:"observedAt"`
	Status     Status  `json:"status"`
	Detail     string  `json:"detail,omitempty"`
	Seconds    float64 `json:"seconds"`

	Runtime Runtime `json:"runtime"`
	Limits  Limits  `json:"limits"`

	ServerInfo      any    `json:"serverInfo,omitempty"`
	ProtocolVersion string `json:"protocolVersion,omitempty"`
	Tools           []any  `json:"tools,omitempty"`
	ToolSetDigest   string `json:"toolSetDigest,omitempty"` // MTL/1 SRI, as the crawler computes it
	DigestError     string `json:"digestError,omitempty"`   // MTL code when the tools have no digest

	Calls        Coverage      `json:"calls"`
	Install      InstallRecord `json:"install"`
	Behaviour    Behaviour     `json:"behaviour"`
	VersionFacts *VersionFacts `json:"versionFacts,omitempty"`
	Stages       []Stage       `json:"stages"`
}

// Runtime names exactly what ran the package.
type Runtime struct {
	Name        string `json:"name"`    // "runsc"
	Version     string `json:"version"` // first line of runsc --version
	Spec        string `json:"spec,omitempty"`
	Platform    string `json:"platform,omitempty"`
	Root        string `json:"root"`       // "node" or "python"
	RootDigest  string `json:"rootDigest"` // sha256:<hex> of the root image
	RootRelease string `json:"rootRelease,omitempty"`
	Network     string `json:"network"` // "traps" or "none"
}

// Limits are the bounds one run had. Durations in seconds.
type Limits struct {
	MemoryBytes    int64   `json:"memoryBytes"`
	CPUs           float64 `json:"cpus"`
	TmpBytes       int64   `json:"tmpBytes"`
	Pids           int     `json:"pids"`
	InstallSeconds float64 `json:"installSeconds"`
	RunSeconds     float64 `json:"runSeconds"`
	CallSeconds    float64 `json:"callSeconds"`
	Calls          int     `json:"calls"`
	ReadOnlyRoot   bool    `json:"readOnlyRoot"`
}

// DefaultLimits are the and HISTOR's: 512 MiB, 1 CPU, a 64 MiB /tmp,
// 360 s to install, 150 s to start and answer, 8 s per call, 15 calls.
func DefaultLimits() Limits {
	return Limits{
		MemoryBytes: 512 << 20, CPUs: 1, TmpBytes: 64 << 20, Pids: 256,
		InstallSeconds: 360, RunSeconds: 150, CallSeconds: 8, Calls: 15, ReadOnlyRoot: true,
	}
}

// Coverage is what the canary calls reached. Complete only when every tool
// was called and succeeded: skipped calls never count.
type Coverage struct {
	Total      int           `json:"total"`
	Attempted  int           `json:"attempted"`
	Successful int           `json:"successful"`
	Errors     int           `json:"errors"`
	Timeouts   int           `json:"timeouts"`
	Skipped    int           `json:"skipped"`
	Complete   bool          `json:"complete"`
	Outcomes   []CallOutcome `json:"outcomes"`
}

// CallOutcome is one tool's call: success, error, timeout or skipped.
type CallOutcome struct {
	Tool    string  `json:"tool"`
	Status  string  `json:"status"`
	Reason  string  `json:"reason,omitempty"`
	Seconds float64 `json:"seconds,omitempty"`
}

// InstallRecord is the install stage: what was fetched and what the install
// scripts did in their own traced stage.
type InstallRecord struct {
	Status         string   `json:"status"` // ok, failed, timeout
	Seconds        float64  `json:"seconds"`
	Detail         string   `json:"detail,omitempty"`
	ScriptPackages []string `json:"scriptPackages"`    // packages with preinstall/install/postinstall
	Scripts        *Phase   `json:"scripts,omitempty"` // nil when no package had scripts
}

// Behaviour is what the package did, per phase, as recorded from outside
// the sandbox. A record of what happened, never a verdict.
type Behaviour struct {
	Observer string `json:"observer"` // "histor-gvisor-trace/1"
	Startup  Phase  `json:"startup"`  // start until tools/list answered
	Calls    Phase  `json:"calls"`    // the canary calls
	Complete bool   `json:"complete"`
}

// Phase holds one phase's records. Lists are bounded; Truncated says a list
// hit its bound, and Complete is false with the reasons when anything could
// not be attributed or read.
type Phase struct {
	Complete          bool             `json:"complete"`
	IncompleteReasons []string         `json:"incompleteReasons,omitempty"`
	ExitCode          *int             `json:"exitCode,omitempty"`
	TimedOut          bool             `json:"timedOut,omitempty"`
	Exec              []string         `json:"exec"`
	Lookups           []string         `json:"lookups"`
	Network           []NetworkAttempt `json:"network"`
	Decoys            []DecoyRead      `json:"decoys"`
	Placeholders      []PlaceholderUse `json:"placeholders"`
	Writes            []string         `json:"writes"`
	Truncated         bool             `json:"truncated,omitempty"`
}

// NetworkAttempt is one connection a trap received (or the trace saw
// refused): nothing was forwarded anywhere.
type NetworkAttempt struct {
	Protocol   string   `json:"protocol"`       // dns, http, https, smtp, tcp, udp
	Host       string   `json:"host,omitempty"` // looked-up name, Host header or SNI
	Address    string   `json:"address,omitempty"`
	Port       int      `json:"port,omitempty"`
	SNI        string   `json:"sni,omitempty"`
	Method     string   `json:"method,omitempty"`
	Path       string   `json:"path,omitempty"`
	Recipients []string `json:"recipients,omitempty"`
	FirstBytes string   `json:"firstBytes,omitempty"` // printable prefix, bounded
	Bytes      int64    `json:"bytes"`
	SHA256     string   `json:"sha256,omitempty"` // of what was sent
	Canary     bool     `json:"canary"`           // a decoy or placeholder value was in it
}

// DecoyRead is a decoy file the package opened.
type DecoyRead struct {
	Path string `json:"path"`
}

// PlaceholderUse is a decoy or placeholder value seen leaving: in a trap
// record, or in a tool's answer.
type PlaceholderUse struct {
	Name  string `json:"name"`  // env variable or decoy file
	Where string `json:"where"` // e.g. "https histor-trap.invalid:443", "tool get-env"
}

// VersionFacts come from the package registry. A field the registry did not
// send is "unknown", never "lost".
type VersionFacts struct {
	Provenance     string            `json:"provenance"` // present, absent, unknown
	Publisher      string            `json:"publisher"`  // name, or "oidc publisher: ID" for a version npm published through trusted publishing; "unknown"
	InstallScripts []string          `json:"installScripts"`
	Dependencies   map[string]string `json:"dependencies"`
	Previous       string            `json:"previous,omitempty"` // the version compared against
	Signals        []string          `json:"signals"`            // provenance-lost, publisher-changed, install-scripts-added, new-dependencies, dependency-specs-changed, install-scripts
}

// Stage is one line of the progress a run reports.
type Stage struct {
	Name    string  `json:"name"` // resolve, install, scripts, run, talk
	Status  string  `json:"status"`
	Seconds float64 `json:"seconds"`
	Detail  string  `json:"detail,omitempty"`
}
