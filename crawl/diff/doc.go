// Package diff says what changed between two tool sets: the part of a
// continuity fail a person can read.
//
// A continuity label only says that two digests differ. Compare says where:
// tools added and removed, tools renamed (a removed and an added tool with the
// same description and schemas), and for each tool present on both sides the
// members that moved: descriptions and titles as a word diff, schemas and
// annotations as a list of JSON paths with their values before and after. A
// change confined to "$schema" and "additionalProperties" keywords is marked
// serialization-only: that is what a schema library upgrade (zod v4) does to
// unchanged tools.
//
// Compare also lists the outside addresses (URL hosts, e-mail addresses,
// bare domains, IPv4 addresses) the new set mentions and the old did not,
// found by HISTOR's rules so both observers report the same ones. When one
// side has no digestible tool set, CompareNames compares the two sets of
// names alone, as HISTOR's "names-only" summaries do.
//
// The result is derived from two content-addressed tool sets anyone can
// fetch, so it is a convenience and not a claim: Compare is deterministic and
// re-running it gives the same answer. Its JSON is the "summary" of HISTOR's
// change records (added and removed as plain name sets, modified[].fields,
// detail, newAddresses, newAddressesTotal), with renamed and
// serializationOnly added; the crawl stores a Change as that summary.
//
// Every output is bounded: the word diff runs an LCS only over a bounded
// middle (after the common prefix and suffix are set aside) and otherwise
// reports a whole replacement; path lists and the values they quote are cut
// at fixed sizes, long member names in paths are shortened, and every cut
// is marked.
package diff
