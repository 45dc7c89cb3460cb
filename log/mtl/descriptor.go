package mtl

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"slices"

	"github.com/histor-observer/histor/log/canon"
)

// Descriptor is an MCP Server Descriptor (MTL/1 §4.2), the subject of a
// label. Empty optional fields are omitted from its JSON, never written as
// null or "" (§4.3), because presence changes the subject digest.
type Descriptor struct {
	Server   Server
	ToolSet  ToolSet
	Artifact Artifact // omitted when all its fields are empty
}

// Server identifies the server within a registry.
type Server struct {
	Name     string // required
	Registry string // required, an opaque namespace such as urn:awr:mtl:1:registry:…
	// Version is optional. HISTOR leaves it empty so that a version bump with
	// identical tools keeps the same subject; the profile's worked example
	// sets it.
	Version string
}

// ToolSet summarises the tool set; Count and Names are redundant with the
// digest and exist so a reader can render something without the tools.
type ToolSet struct {
	Count     int
	Names     []string // sorted in UTF-16 code units
	DigestSRI string   // empty when the tool set is not digestible (MTL-NUM-001)
}

// Artifact records what the observer connected to.
type Artifact struct {
	Transport string // "stdio", "streamable-http" or "sse"
	Endpoint  string
	Package   string
}

// Transports MTL/1 §4.2 allows in artifact.transport.
var Transports = []string{"stdio", "streamable-http", "sse"}

// Build makes the descriptor of a tool set as HISTOR does. A tool set that
// MTL/1 refuses outright (MTL-SUBJ-001/002/003) is an error. A tool set that
// is well formed but not digestible (MTL-NUM-001) still gets a descriptor,
// without toolSet.digestSRI, and the refusal is returned as hazard: the label
// over it is inconclusive, not missing.
func Build(server Server, tools []any, art Artifact) (d Descriptor, hazard *Refusal, err error) {
	entries, err := Normalize(tools)
	if err != nil {
		return Descriptor{}, nil, err
	}
	names := make([]string, len(entries))
	for i, e := range entries {
		names[i] = e.(map[string]any)["name"].(string)
	}
	d = Descriptor{Server: server, ToolSet: ToolSet{Count: len(names), Names: names}, Artifact: art}
	sri, err := Digest(tools)
	var r *Refusal
	switch {
	case errors.As(err, &r) && r.Code == CodeNumber:
		hazard = r
	case err != nil:
		return Descriptor{}, nil, err
	default:
		d.ToolSet.DigestSRI = sri
	}
	if err := d.Validate(); err != nil {
		return Descriptor{}, nil, err
	}
	return d, hazard, nil
}

// Validate checks the rules of MTL/1 §4.2 that the type cannot express.
func (d Descriptor) Validate() error {
	if d.Server.Name == "" {
		return refuse(CodeNotTool, "", "server.name must be a non-empty string")
	}
	if d.Server.Registry == "" {
		return refuse(CodeNotTool, "", "server.registry must be a non-empty string")
	}
	if t := d.Artifact.Transport; t != "" && !slices.Contains(Transports, t) {
		return refuse(CodeInput, "", "artifact.transport %q is not one of stdio, streamable-http, sse", t)
	}
	if d.ToolSet.Count < 0 || d.ToolSet.Count != len(d.ToolSet.Names) {
		return refuse(CodeInput, "", "toolSet.count %d does not match %d names", d.ToolSet.Count, len(d.ToolSet.Names))
	}
	if !slices.IsSortedFunc(d.ToolSet.Names, canon.CompareUTF16) {
		return refuse(CodeInput, "", "toolSet.names are not sorted in UTF-16 code units")
	}
	return nil
}

// Map returns the descriptor as the JSON tree MTL/1 digests.
func (d Descriptor) Map() map[string]any {
	server := map[string]any{"name": d.Server.Name, "registry": d.Server.Registry}
	putIf(server, "version", d.Server.Version)
	names := make([]any, len(d.ToolSet.Names))
	for i, n := range d.ToolSet.Names {
		names[i] = n
	}
	ts := map[string]any{"count": int64(d.ToolSet.Count), "names": names}
	putIf(ts, "digestSRI", d.ToolSet.DigestSRI)
	m := map[string]any{"mtl": "1", "server": server, "toolSet": ts}
	art := map[string]any{}
	putIf(art, "transport", d.Artifact.Transport)
	putIf(art, "endpoint", d.Artifact.Endpoint)
	putIf(art, "package", d.Artifact.Package)
	if len(art) > 0 {
		m["artifact"] = art
	}
	return m
}

func putIf(m map[string]any, k, v string) {
	if v != "" {
		m[k] = v
	}
}

// JCS validates the descriptor and returns its RFC 8785 bytes, the bytes the
// subject digest is over (and the descriptor evidence a label cites).
func (d Descriptor) JCS() ([]byte, error) {
	if err := d.Validate(); err != nil {
		return nil, err
	}
	return canon.Encode(d.Map())
}

// Subject returns the descriptor's subject digest (SRI) and subject URN.
func (d Descriptor) Subject() (sri, urn string, err error) {
	b, err := d.JCS()
	if err != nil {
		return "", "", err
	}
	return SubjectDigest(b), SubjectURN(b), nil
}

// SubjectDigest is the subject digest of a descriptor's JCS bytes (§4.5).
func SubjectDigest(descJCS []byte) string { return SRI(descJCS) }

// SubjectURN is urn:awr:mtl:1:subject:sha256:<lowercase hex> over the same
// bytes (§4.5); it is an identifier, never resolved.
func SubjectURN(descJCS []byte) string {
	sum := sha256.Sum256(descJCS)
	return "urn:awr:mtl:1:subject:sha256:" + hex.EncodeToString(sum[:])
}

// ServerID is HISTOR's short server id: the first 16 hex characters of
// SHA-256(name + "\n" + endpoint).
func ServerID(name, endpoint string) string {
	sum := sha256.Sum256([]byte(name + "\n" + endpoint))
	return hex.EncodeToString(sum[:8])
}
