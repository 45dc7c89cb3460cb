// Package scan holds the two rule-driven checks a crawl runs over what a
// server advertised: the tool-definition pattern scan (MTL/1 method
// tool-def-pattern-scan) and the name-threat match (method name-threat-match).
//
// Both are driven by versioned JSON documents shipped in configs/ and cited in
// labels by digest: a pattern set (rules with block/advise tiers, surfaces and
// context guards) and a record set (known-malicious or impersonating names).
// A digest is an SRI over the RFC 8785 form of {version, rules} (or
// {version, records}), rules sorted by code unit, as the MTL/1 profile's
// example pattern set is digested, so two labels name the same rules exactly
// when their digests agree.
//
// A match is never a verdict. A scan with matches yields an inconclusive label,
// never a fail; the guards exist because field surveys showed that a bare
// regular expression mostly selects for honest servers describing what they
// refuse to do.
//
// Every scan is bounded: bytes scanned per tool and in total, matches per tool
// and in total, schema depth. Regular expressions are RE2 (Go regexp), so no
// rule can backtrack, and the rules themselves use bounded gaps only.
package scan
