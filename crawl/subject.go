package crawl

import (
	"errors"
	"fmt"
	"slices"

	"github.com/histor-observer/histor/crawl/registry"
	"github.com/histor-observer/histor/log/canon"
	"github.com/histor-observer/histor/log/mtl"
)

// subject is what MTL/1 makes of one ok observation.
type subject struct {
	desc    mtl.Descriptor
	descJCS []byte // evidence "descriptors", addressed by sri
	sri     string // subject digest
	urn     string
	// toolSet is the canonical tool set (evidence "toolsets", addressed by
	// digest); both empty when the set has no digest.
	toolSet []byte
	digest  string
	// refusal says why there is no digest (MTL-NUM-001, or a set MTL/1
	// refuses outright, which gets a names-only descriptor as HISTOR's does).
	refusal *mtl.Refusal
	// namesOnly says the descriptor is that names-only one.
	namesOnly bool
}

// buildSubject digests tools and builds the subject descriptor: server name
// and registry URN (no version, so a version bump with identical tools keeps
// the subject), artifact transport and endpoint (or, for a package, the
// package version observed).
func buildSubject(t registry.Target, registryURN string, tools []any) (*subject, error) {
	if t.Registry != "" {
		registryURN = t.Registry // a curated target, in histor's own namespace
	}
	server := mtl.Server{Name: t.Name, Registry: registryURN}
	art := mtl.Artifact{Transport: t.Transport, Endpoint: t.Endpoint}
	if t.Sandboxed() {
		// A package is named by the version observed, never by where it
		// was fetched from.
		art = mtl.Artifact{Transport: t.Transport, Package: t.Package}
	}
	desc, hazard, err := mtl.Build(server, tools, art)
	var refusal *mtl.Refusal
	namesOnly := errors.As(err, &refusal) && refusal.Code != mtl.CodeInput
	if namesOnly {
		desc, err = fallbackDescriptor(server, art, tools)
	}
	if err != nil {
		return nil, fmt.Errorf("building subject descriptor: %w", err)
	}
	s := &subject{desc: desc, digest: desc.ToolSet.DigestSRI, refusal: refusal, namesOnly: namesOnly}
	if hazard != nil {
		s.refusal = hazard
	}
	if s.descJCS, err = desc.JCS(); err != nil {
		return nil, fmt.Errorf("canonicalising subject descriptor: %w", err)
	}
	if s.sri, s.urn, err = desc.Subject(); err != nil {
		return nil, fmt.Errorf("digesting subject descriptor: %w", err)
	}
	if s.digest != "" {
		if s.toolSet, err = mtl.CanonicalToolSet(tools); err != nil {
			return nil, fmt.Errorf("canonicalising tool set: %w", err)
		}
	}
	return s, nil
}

// fallbackDescriptor is the names-only descriptor of a tool set MTL/1 refuses
// (not an object, nameless, empty, duplicate names): the server did show it,
// and the inconclusive label over it needs a subject to point at.
func fallbackDescriptor(server mtl.Server, art mtl.Artifact, tools []any) (mtl.Descriptor, error) {
	seen := map[string]bool{}
	var names []string
	for _, t := range tools {
		m, ok := t.(map[string]any)
		if !ok {
			continue
		}
		if n, ok := m["name"].(string); ok && n != "" && !seen[n] {
			seen[n] = true
			names = append(names, n)
		}
	}
	slices.SortFunc(names, canon.CompareUTF16)
	d := mtl.Descriptor{Server: server, ToolSet: mtl.ToolSet{Count: len(names), Names: names}, Artifact: art}
	return d, d.Validate()
}
