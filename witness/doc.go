// Package witness is a c2sp.org/tlog-witness witness: it cosigns the checkpoints of the logs
// it witnesses (the node's peers and any log an operator adds) with a cosignature/v1 key, and
// only ever a checkpoint that extends the one it cosigned last for that log.
//
// A submission (POST /add-checkpoint over HTTP, or AddCheckpoint from any other transport) is
// checked in the spec's order: a malformed body or an old size above the checkpoint's is 400;
// an unknown origin 404; no valid signature by the log's key 403; an old size other than the
// size cosigned last 409, with that size as the body (text/x.tlog.size); a size-0 checkpoint
// with a root other than the empty tree's, a proof from size 0, a proof that does not verify,
// or the cosigned size with another root 422 (the current spec; tlog-witness v1.0.0 said 409
// for the last, and clients treat both as a refusal). Checkpoints are parsed by log/format,
// which refuses extension lines (Sunlight's witness does too). Otherwise the witness signs,
// writes the new state in one synced Pebble batch, and only then answers 200 with its
// cosignature line: a failed write answers 500 and shows no cosignature. No read (the
// monitoring route, the size a 409 names, the evidence) shows a write before it is
// acknowledged: Pebble shows a batch to its reads before its WAL sync, and keeps it there
// when the sync fails, so a key a commit in flight or failed wrote is read as it was before.
//
// Each origin has one turn at a time: reading its state, deciding and writing happen in that
// turn, which makes the old-size check and the update one compare-and-swap, so two racing
// submissions can never roll the state back. The state is, per origin, the latest cosigned
// checkpoint (size, root, the note as submitted and as cosigned), and beside it every
// checkpoint cosigned before, by size. That history is what catches a rollback: a checkpoint
// at a size cosigned earlier with another root is a fork, whatever old size it comes with.
//
// When two checkpoints the log signed cannot be one tree (one size, two roots; or a
// consistency proof of the right length between them that fails), the witness refuses and
// keeps a format.Equivocation bundle of both notes, as submitted, and the proof: checkable
// offline by anyone with the log's key (format.VerifyEquivocation). Bundles are named by the
// pair of checkpoints, so one fork is stored and announced (Config.OnEvidence) once. A
// failed-proof bundle is a claim the log can answer with a proof that verifies; a same-size
// bundle is conclusive.
//
// The witness runs no goroutines of its own; the node opens it with New, mounts Handler, and
// closes it after its HTTP server has stopped.
package witness
