// Package mtl computes what MTL/1 (the MCP Trust Label profile of AWR/2)
// pins about an MCP server: the tool-set digest of §5, the MCP Server
// Descriptor of §4, its subject digest and subject URN, and HISTOR's server
// id.
//
// A tool set is read from the bytes a server sent, with log/canon's strict
// parser; number literals canon refuses are held back until normalisation
// has dropped the members MTL/1 does not digest (as HISTOR does), so only a
// refused number that would be digested stops the digest, as MTL-NUM-001.
//
// Refusal codes: MTL-SUBJ-001 (a tool is not an object or has no non-empty
// string name; also a descriptor without server name or registry),
// MTL-SUBJ-002 (empty tool set), MTL-SUBJ-003 (duplicate tool names),
// MTL-NUM-001 (a digested member holds a number canon refuses). Input that
// is not JSON canon accepts keeps its AWR-CANON code (a *canon.Error); JSON
// that is not a tools/list result at all is HISTOR-INPUT-001, a code of our
// own, because MTL/1 has none for it.
package mtl
