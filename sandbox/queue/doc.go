// Package queue carries sandbox jobs from the node to workers and their
// results back, over a NATS JetStream work queue, so observation scales out
// to as many machines as run a worker.
//
// The node owns the Queue: an embedded nats-server with JetStream (or a
// connection to an external cluster), a jobs stream that holds each package
// version once per duplicate window, a results stream, and a record of the
// jobs it issued and has not yet seen answered. Workers authenticate with
// NKeys, may fetch only from the shared jobs consumer, ack, publish results
// under their own key and read their own inbox.
//
// A worker binds its result to the job with an HMAC keyed by the job's
// per-job token. The node accepts a result only for a job it issued that is
// still pending, for the same target, with a valid binding and an
// observation of that package; everything else is dropped and counted. A
// job that fails on every delivery ends as one poisoned result, recorded,
// and leaves the stream: a job is never retried forever. Workers never sign
// anything: only the node signs labels from what the handler accepts.
package queue
