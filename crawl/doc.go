// Package crawl is the orchestrator that turns the MCP registry into signed
// labels in the log. One Run is one full crawl:
//
//  1. harvest the registry (crawl/registry) and remember every target in
//     crawl/state; targets that vanished are marked delisted only after a
//     complete harvest;
//  2. schedule the dialable targets over Config.Workers workers, hosts
//     interleaved and never more than Config.PerHost observations (and, in
//     the guard, connections) to one host at once;
//  3. observe each with crawl/mcpclient through crawl/guard; templated and
//     opted-out targets are never dialled but still get their status;
//  4. per ok observation: the MTL/1 digest and subject descriptor (log/mtl),
//     and labels (log/awr): observation, pattern scan and name-threat match
//     for a new subject (or a new pattern or record set), continuity once
//     Config.ContinuityGap has passed since the last link of the target's
//     chain, and one inconclusive continuity label when a target stops
//     answering; a change record (crawl/diff) when the digest moved;
//     All of this is decided in one pure function, decide (decide.go), from
//     the target's previous state, the attempt, the time and the crawl's
//     fixed settings; signing, appending and storing follow it;
//  5. append the labels and their evidence to the log in batches, commit the
//     targets' state after the append is durable, and sign a head.
//
// What gets a label and when follows HISTOR's crawler: the log records facts,
// not a daily copy of the same facts, so an unchanged target adds only a
// continuity label per gap.
package crawl
