package main

// A run is one `go test -bench` invocation: the benchmarks of one package that share a
// -benchtime. Every benchmark of the repository is in exactly one run (TestEveryBenchmarkRuns).
type run struct {
	Pkg       string
	Benches   []string // top-level names without "Benchmark"; their sub-benchmarks run too
	Benchtime string
	Env       []string // KEY=VALUE beside the environment
}

// A row is one figure of the document: a benchmark's metric beside its baseline from the same
// run. The ratio is Metric / BaseMetric; the goal applies to the ratio when there is a
// baseline, to the figure itself otherwise.
type row struct {
	Section    string
	Bench      string // full name without "Benchmark", e.g. "HTTPReadAPI20k/servers"
	Metric     string // a unit go test printed, e.g. "ns/op", "proofs/s", "p99-ms"
	Base       string // the baseline's benchmark ("" for none; may equal Bench)
	BaseMetric string
	Goal       goal
	Note       string // what the row is, in a few words
}

// goal is a bound on a row's ratio (or figure); Op "" means none is set.
type goal struct {
	Op    string // ">=" or "<="
	Value float64
	Unit  string // printed after the value: "×" for ratios, else the figure's unit
}

func atLeast(v float64, unit string) goal { return goal{">=", v, unit} }
func atMost(v float64, unit string) goal  { return goal{"<=", v, unit} }

// met reports whether x meets g; ok is false when g sets nothing.
func (g goal) met(x float64) (met, ok bool) {
	switch g.Op {
	case ">=":
		return x >= g.Value, true
	case "<=":
		return x <= g.Value, true
	}
	return false, false
}

var runs = []run{
	{Pkg: "./log", Benches: []string{"Append1KiB", "Append1KiBSingle", "RawPebbleSyncedBatch"}, Benchtime: "100000x"},
	{Pkg: "./log", Benches: []string{"AppendMetrics"}, Benchtime: "20x"},
	{Pkg: "./log", Benches: []string{"MetricsPerBatch", "InclusionProof1M", "ConsistencyProof1M", "Open1M"}, Benchtime: "2s"},
	{Pkg: "./log/awr", Benches: []string{"Verify", "IssueLabel", "Sign", "DIDKeyRoundTrip"}, Benchtime: "1s"},
	{Pkg: "./log/mtl", Benches: []string{"DigestListResult", "DescriptorSubject"}, Benchtime: "1s"},
	{Pkg: "./log/canon", Benches: []string{"Parse", "Canonicalize"}, Benchtime: "1s"},
	{Pkg: "./log/keys", Benches: []string{"Derive"}, Benchtime: "1s"},
	{Pkg: "./gossip/wire", Benches: []string{"VerifyHead"}, Benchtime: "1s"},
	{Pkg: "./witness", Benches: []string{"AddCheckpoint"}, Benchtime: "1s"},
	{Pkg: "./crawl/guard", Benches: []string{"BareRoundTrip", "GuardedRoundTrip", "Check"}, Benchtime: "1s"},
	{Pkg: "./crawl/mcpclient", Benches: []string{"ObserveLoopback"}, Benchtime: "1s"},
	{Pkg: "./crawl/registry", Benches: []string{"Harvest10k"}, Benchtime: "5x"},
	{Pkg: "./crawl/scan", Benches: []string{"NameIndex20000", "NameBruteForce100", "NameMatchCrowded", "ScanEverything13", "Scan5000Tools", "ScanHostileKey"}, Benchtime: "1s"},
	{Pkg: "./crawl/diff", Benches: []string{"AddressesIn", "Compare1000Tools", "WordsWorstCase", "CompareHostileKey"}, Benchtime: "1s"},
	{Pkg: "./crawl", Benches: []string{"Crawl10k"}, Benchtime: "1x"},
	{Pkg: "./node", Benches: []string{"HTTPInclusionProof1M", "HTTPBareHandler"}, Benchtime: "5s"},
	{Pkg: "./node", Benches: []string{"InclusionHandler1M"}, Benchtime: "2s"},
	{Pkg: "./node", Benches: []string{"HTTPReadAPI20k", "HTTPCheck", "HTTPCheckBare"}, Benchtime: "3s"},
	{Pkg: "./node", Benches: []string{"CheckHandler"}, Benchtime: "20000x"},
	{Pkg: "./node", Benches: []string{"DeskPages"}, Benchtime: "2000x"},
	{Pkg: "./node/receipts", Benches: []string{"AnchorSubmit"}, Benchtime: "30x"},
	{Pkg: "./node", Benches: []string{"Federation", "FederationAgreement"}, Benchtime: "40x"},
	{Pkg: "./node", Benches: []string{"MirrorFederation"}, Benchtime: "1x"},
	{Pkg: "./node/mirror", Benches: []string{"Sync", "SyncBaselinePebble"}, Benchtime: "3x"},
	{Pkg: "./node/catalog", Benches: []string{"Search20k", "Update20k"}, Benchtime: "1s"},
	{Pkg: "./node/events", Benches: []string{"Page"}, Benchtime: "1s"},
	{Pkg: "./node/audit", Benches: []string{"Audit"}, Benchtime: "1s"},
	{Pkg: "./sandbox/gvisor", Benches: []string{"RunTrue", "BareRunscDoTrue"}, Benchtime: "10x"},
	{Pkg: "./sandbox/trap", Benches: []string{"OpenClose"}, Benchtime: "10x"},
	{Pkg: "./sandbox/stdio", Benches: []string{"EverythingSession"}, Benchtime: "3x"},
	{Pkg: "./sandbox/observer", Benches: []string{"ObserveEverything"}, Benchtime: "3x"},
	{Pkg: "./sandbox/queue", Benches: []string{"Queue"}, Benchtime: "2000x"},
}

const x = "×"

var rows = []row{
	// The log.
	{Section: "Log", Bench: "Append1KiB", Metric: "labels/s", Base: "RawPebbleSyncedBatch", BaseMetric: "labels/s", Goal: atLeast(0.8, x), Note: "durable appends, 4 labels per call, beside a raw synced Pebble batch"},
	{Section: "Log", Bench: "Append1KiB", Metric: "labels/s", Goal: atLeast(40000, "labels/s"), Note: "the same, against its absolute goal"},
	{Section: "Log", Bench: "Append1KiBSingle", Metric: "labels/s", Base: "RawPebbleSyncedBatch", BaseMetric: "labels/s", Note: "durable appends, 1 label per call"},
	{Section: "Log", Bench: "AppendMetrics", Metric: "labels/s-on", Base: "AppendMetrics", BaseMetric: "labels/s-off", Goal: atLeast(0.97, x), Note: "appends with metrics on, beside off"},
	{Section: "Log", Bench: "MetricsPerBatch/metrics", Metric: "ns/op", Base: "MetricsPerBatch/raw-pebble-batch", BaseMetric: "ns/op", Note: "metrics per batch, beside one raw Pebble batch"},
	{Section: "Log", Bench: "InclusionProof1M", Metric: "proofs/s", Note: "inclusion proofs of a 1M-leaf log, in process"},
	{Section: "Log", Bench: "ConsistencyProof1M", Metric: "ns/op", Note: "consistency proofs of a 1M-leaf log"},
	{Section: "Log", Bench: "Open1M", Metric: "ns/op", Note: "opening a 1M-leaf log"},
	// Formats.
	{Section: "Formats", Bench: "Verify", Metric: "ns/op", Base: "Sign", BaseMetric: "ns/op", Note: "checking one AWR/2 label, beside one signature"},
	{Section: "Formats", Bench: "IssueLabel", Metric: "ns/op", Base: "Sign", BaseMetric: "ns/op", Note: "issuing one label, beside one signature"},
	{Section: "Formats", Bench: "Sign", Metric: "ns/op", Note: "one AWR/2 signature"},
	{Section: "Formats", Bench: "DIDKeyRoundTrip", Metric: "ns/op", Note: "did:key encode and decode"},
	{Section: "Formats", Bench: "DigestListResult", Metric: "ns/op", Note: "MTL/1 digest of a tools/list result"},
	{Section: "Formats", Bench: "DescriptorSubject", Metric: "ns/op", Note: "MTL/1 descriptor subject"},
	{Section: "Formats", Bench: "Parse", Metric: "ns/op", Base: "Canonicalize", BaseMetric: "ns/op", Note: "strict JSON parse, beside canonicalisation"},
	{Section: "Formats", Bench: "Canonicalize", Metric: "ns/op", Note: "RFC 8785 canonicalisation"},
	{Section: "Formats", Bench: "Derive", Metric: "ns/op", Note: "deriving the node's keys from its seed"},
	{Section: "Formats", Bench: "VerifyHead/head", Metric: "ns/op", Base: "VerifyHead/ed25519", BaseMetric: "ns/op", Note: "checking a gossiped head, beside a bare Ed25519 signature check"},
	{Section: "Formats", Bench: "VerifyHead/observation", Metric: "ns/op", Base: "VerifyHead/ed25519", BaseMetric: "ns/op", Note: "checking a gossiped observation digest"},
	{Section: "Formats", Bench: "AddCheckpoint", Metric: "ns/op", Note: "the witness cosigning one checkpoint"},
	// Crawl.
	{Section: "Crawl", Bench: "GuardedRoundTrip", Metric: "ns/op", Base: "BareRoundTrip", BaseMetric: "ns/op", Note: "an HTTP round trip through the address guard, beside bare"},
	{Section: "Crawl", Bench: "Check", Metric: "ns/op", Note: "one address-guard decision"},
	{Section: "Crawl", Bench: "ObserveLoopback/sdk-legacy", Metric: "cpu-µs/op", Base: "ObserveLoopback/baseline-post", BaseMetric: "cpu-µs/op", Note: "one MCP observation of the Go SDK server, beside one bare POST"},
	{Section: "Crawl", Bench: "ObserveLoopback/fake-legacy", Metric: "cpu-µs/op", Base: "ObserveLoopback/baseline-post", BaseMetric: "cpu-µs/op", Note: "one MCP observation of a minimal server"},
	{Section: "Crawl", Bench: "Harvest10k", Metric: "ns/op", Note: "harvesting a 10,000-server registry fixture"},
	{Section: "Crawl", Bench: "Crawl10k/names=distinct", Metric: "wall-s", Goal: atMost(60, "s"), Note: "crawling 10,000 endpoints, distinct names"},
	{Section: "Crawl", Bench: "Crawl10k/names=distinct", Metric: "cpu-ms/obs", Base: "Crawl10k/names=distinct", BaseMetric: "baseline-cpu-ms/obs", Note: "CPU per observation, beside the same POSTs bare"},
	{Section: "Crawl", Bench: "Crawl10k/names=distinct", Metric: "extra-cpu-ms/obs", Goal: atMost(1, "ms"), Note: "CPU per observation beyond the bare POSTs"},
	{Section: "Crawl", Bench: "Crawl10k/names=generated", Metric: "wall-s", Goal: atMost(60, "s"), Note: "crawling 10,000 endpoints, names all near each other"},
	{Section: "Crawl", Bench: "Crawl10k/names=generated", Metric: "extra-cpu-ms/obs", Note: "CPU per observation beyond the bare POSTs"},
	{Section: "Crawl", Bench: "Update20k/one", Metric: "ns/op", Base: "Update20k/reload", BaseMetric: "ns/op", Note: "the catalog of 20,000 brought up to date after a package run (one target), beside reloading it whole"},
	{Section: "Crawl", Bench: "Update20k/all", Metric: "ns/op", Base: "Update20k/reload", BaseMetric: "ns/op", Note: "after a crawl that wrote every target"},
	{Section: "Crawl", Bench: "NameIndex20000/match-all", Metric: "ns/op", Note: "name look-alike matching over 20,000 names"},
	{Section: "Crawl", Bench: "NameIndex20000/build", Metric: "ns/op", Note: "building the name index"},
	{Section: "Crawl", Bench: "NameBruteForce100", Metric: "ns/op", Note: "brute-force matching over 100 names (the index's reference)"},
	{Section: "Crawl", Bench: "NameMatchCrowded", Metric: "ns/op", Note: "matching among names all within edit distance 2"},
	{Section: "Crawl", Bench: "ScanEverything13", Metric: "ns/op", Note: "pattern scan of server-everything's tools"},
	{Section: "Crawl", Bench: "Scan5000Tools", Metric: "ns/op", Note: "pattern scan of 5,000 tools"},
	{Section: "Crawl", Bench: "ScanHostileKey", Metric: "ns/op", Note: "pattern scan of a hostile schema key"},
	{Section: "Crawl", Bench: "AddressesIn", Metric: "ns/op", Note: "finding addresses in a description"},
	{Section: "Crawl", Bench: "Compare1000Tools", Metric: "ns/op", Note: "diffing two 1,000-tool sets"},
	{Section: "Crawl", Bench: "WordsWorstCase", Metric: "ns/op", Note: "word diff, worst case"},
	{Section: "Crawl", Bench: "CompareHostileKey", Metric: "ns/op", Note: "diffing a hostile schema key"},
	// HTTP API.
	{Section: "HTTP", Bench: "HTTPInclusionProof1M", Metric: "proofs/s", Base: "HTTPBareHandler", BaseMetric: "req/s", Note: "inclusion proofs over loopback TCP, beside a bare net/http handler"},
	{Section: "HTTP", Bench: "HTTPInclusionProof1M", Metric: "p99-ms", Base: "HTTPBareHandler", BaseMetric: "p99-ms", Note: "their p99 latency"},
	{Section: "HTTP", Bench: "HTTPInclusionProof1M", Metric: "proofs/s", Goal: atLeast(15000, "proofs/s"), Note: "proofs against their absolute goal"},
	{Section: "HTTP", Bench: "HTTPInclusionProof1M", Metric: "p99-ms", Goal: atMost(5, "ms"), Note: "proof p99 against its goal"},
	{Section: "HTTP", Bench: "InclusionHandler1M", Metric: "ns/op", Note: "the proof handler without the network"},
	{Section: "HTTP", Bench: "HTTPReadAPI20k/servers", Metric: "req/s", Base: "HTTPReadAPI20k/servers-bare", BaseMetric: "req/s", Note: "/api/v1/servers over 20,000 servers, beside bare answers of the same bytes"},
	{Section: "HTTP", Bench: "HTTPReadAPI20k/servers", Metric: "p99-ms", Goal: atMost(20, "ms"), Note: "its p99"},
	{Section: "HTTP", Bench: "HTTPReadAPI20k/server-page", Metric: "req/s", Base: "HTTPReadAPI20k/servers-bare", BaseMetric: "req/s", Note: "/api/v1/servers/<id>"},
	{Section: "HTTP", Bench: "HTTPReadAPI20k/server-page", Metric: "p99-ms", Goal: atMost(20, "ms"), Note: "its p99"},
	{Section: "HTTP", Bench: "Search20k/one", Metric: "ns/op", Note: "catalog search matching one of 20,000"},
	{Section: "HTTP", Bench: "Search20k/forty", Metric: "ns/op", Note: "matching forty"},
	{Section: "HTTP", Bench: "Search20k/changed", Metric: "ns/op", Note: "the changed filter"},
	{Section: "HTTP", Bench: "Search20k/all", Metric: "ns/op", Note: "matching all, a page of 200"},
	{Section: "HTTP", Bench: "Search20k/none", Metric: "ns/op", Note: "matching none"},
	{Section: "HTTP", Bench: "Search20k/filter", Metric: "ns/op", Note: "a state filter alone"},
	{Section: "/check", Bench: "HTTPCheck/same", Metric: "checks/s", Base: "HTTPCheckBare/same", BaseMetric: "req/s", Note: "/api/v1/check answers, beside a bare handler"},
	{Section: "/check", Bench: "HTTPCheck/same", Metric: "checks/s", Goal: atLeast(5000, "checks/s"), Note: "the same, against the absolute goal"},
	{Section: "/check", Bench: "HTTPCheck/same", Metric: "p99-ms", Goal: atMost(20, "ms"), Note: "their p99"},
	{Section: "/check", Bench: "CheckHandler/same", Metric: "ns/op", Note: "the check handler without the network"},
	{Section: "Desk", Bench: "DeskPages", Metric: "p99-ms", Goal: atMost(100, "ms"), Note: "the desk's pages, p99 over all"},
	{Section: "Desk", Bench: "DeskPages", Metric: "max-ms", Goal: atMost(100, "ms"), Note: "the slowest page"},
	{Section: "Desk", Bench: "Page/all", Metric: "ns/op", Base: "Page/watch", BaseMetric: "ns/op", Note: "a page of events, beside one filtered by a watch"},
	{Section: "Receipts", Bench: "AnchorSubmit", Metric: "anchors/s", Note: "anchoring receipts in the log"},
	{Section: "Receipts", Bench: "Audit/head+label", Metric: "ns/op", Note: "an audit of the head and one label"},
	{Section: "Receipts", Bench: "Audit/tiles", Metric: "ns/op", Note: "an audit through the tiles"},
	// Federation.
	{Section: "Federation", Bench: "Federation", Metric: "reach-p99-ms", Note: "20 observers: a head reaching every node, p99"},
	{Section: "Federation", Bench: "Federation", Metric: "head+3cosig-p99-ms", Goal: atMost(1000, "ms"), Note: "a head cosigned by three witnesses, p99"},
	{Section: "Federation", Bench: "Federation", Metric: "CPU-µs/accepted-msg", Base: "Federation", BaseMetric: "CPU-µs/bare-ed25519-verify", Note: "CPU per gossip message accepted, beside one bare Ed25519 signature check"},
	{Section: "Federation", Bench: "Federation", Metric: "evidence-reach-ms", Goal: atMost(2000, "ms"), Note: "evidence of a fork reaching every node"},
	{Section: "Federation", Bench: "Federation", Metric: "RSS-MiB/observer", Note: "resident memory per observer"},
	{Section: "Federation", Bench: "FederationAgreement", Metric: "agreement-p99-ms", Base: "FederationAgreement", BaseMetric: "crawl-p99-ms", Goal: atMost(2000, "ms"), Note: "a /check answer carrying every observer's agreement after a crawl (goal on the figure)"},
	{Section: "Federation", Bench: "Sync", Metric: "ns/entry", Base: "SyncBaselinePebble", BaseMetric: "ns/entry", Note: "mirroring a peer's log: fetch, verify and index one entry, beside a raw Pebble batch of the same bytes"},
	{Section: "Federation", Bench: "Sync", Metric: "bytes/entry", Note: "bytes read per entry mirrored"},
	{Section: "Federation", Bench: "MirrorFederation", Metric: "s-after-last-crawl", Goal: atMost(60, "s"), Note: "3 nodes × 20,000 servers: every view complete after the last crawl"},
	{Section: "Federation", Bench: "MirrorFederation", Metric: "s/crawl", Note: "one node's crawl of the 20,000"},
	{Section: "Federation", Bench: "MirrorFederation", Metric: "entries-mirrored/node", Note: "entries each node mirrored"},
	// Sandbox.
	{Section: "Sandbox", Bench: "RunTrue", Metric: "ns/op", Base: "BareRunscDoTrue", BaseMetric: "ns/op", Note: "runsc run of /bin/true with our bundle and checks, beside bare runsc do"},
	{Section: "Sandbox", Bench: "OpenClose", Metric: "open-ms/op", Note: "opening the trap network"},
	{Section: "Sandbox", Bench: "OpenClose", Metric: "close-ms/op", Note: "closing it"},
	{Section: "Sandbox", Bench: "EverythingSession", Metric: "s-to-listed", Note: "server-everything in gVisor: start to tools listed"},
	{Section: "Sandbox", Bench: "ObserveEverything", Metric: "s-observation", Base: "ObserveEverything", BaseMetric: "s-baseline", Note: "a whole observation of server-everything (install cached), beside a bare `runsc do true`"},
	{Section: "Sandbox", Bench: "ObserveEverything", Metric: "s-beyond-baseline", Goal: atMost(3, "s"), Note: "its cost beyond the baseline"},
	{Section: "Sandbox", Bench: "Queue/queue", Metric: "ns/op", Base: "Queue/bare", BaseMetric: "ns/op", Note: "one job through the queue, beside a bare JetStream publish, fetch and ack"},
}
