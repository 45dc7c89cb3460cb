// Package pkgruns is the node's schedule of package runs in the sandbox and
// what it makes of their results. It drives the top-level sandbox packages:
// it queues jobs on sandbox/queue for the versions no run has observed yet
// (resolving an unversioned listing's latest version with sandbox/pkgs),
// optionally runs a worker of its own in the node (sandbox/observer), and
// records every result it gets back for each target of that package: a
// PackageRun in the crawl state and, for a run that said something of the
// package, labels through the crawler's Record with the behaviour record
// as evidence, so a package's labels are made exactly as an endpoint's are.
//
// Its face is small. Open starts the part from a Config whose fields are
// the narrow views of the node it needs (Runs, Recorder, the Committed
// callback, the clock, the logger and the registerer); Close
// stops it. Kick asks for a scheduling round. View reads the runs for the
// API (the signed behaviour census and a server page's package member)
// and needs no open part; Routes serves the census.
package pkgruns
