package witness

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"golang.org/x/mod/sumdb/note"

	"github.com/histor-observer/histor/log/format"
)

// Outcome names how an add-checkpoint request ended, as the result label of
// histor_witness_add_checkpoint_requests_total.
type Outcome string

const (
	OutcomeCosigned     Outcome = "cosigned"      // 200
	OutcomeMalformed    Outcome = "malformed"     // 400: the body, the note, or old > size
	OutcomeTooLarge     Outcome = "too_large"     // 413: a body over MaxBodyBytes (HTTP only)
	OutcomeUnknownLog   Outcome = "unknown_log"   // 404: an origin this witness does not witness
	OutcomeBadSignature Outcome = "bad_signature" // 403: no valid signature by the log's key
	OutcomeConflict     Outcome = "conflict"      // 409: old is not the size cosigned last
	OutcomeInconsistent Outcome = "inconsistent"  // 422: a bad proof, a fork at one size, a bad empty tree
	OutcomeError        Outcome = "error"         // 500: the witness could not answer (store, clock)
)

// ContentTypeSize is the media type of a 409 answer, whose body is the size cosigned last.
const ContentTypeSize = "text/x.tlog.size"

// Result is the answer to an add-checkpoint request, for any transport: HTTP sends Status,
// ContentType and Body as they are.
type Result struct {
	Status      int
	ContentType string
	// Body is, for 200, only this witness's cosignature line; for 409, the size cosigned last
	// and a newline; otherwise Reason and a newline.
	Body    []byte
	Outcome Outcome
	Reason  string // why the checkpoint was refused, for logs; empty when cosigned
	// Evidence is the equivocation bundle this submission showed, whether it was stored now
	// or already held; nil when it showed none.
	Evidence *Evidence
}

// AddCheckpoint answers one c2sp.org/tlog-witness add-checkpoint body. Every answer the spec
// defines comes back as a Result with a nil error; a non-nil error means the witness could not
// answer (a store or clock failure, ctx done while waiting for the log's turn), and then no
// cosignature was made public and the state is as it was. A 200 is returned only after the
// new state is on disk.
func (w *Witness) AddCheckpoint(ctx context.Context, body []byte) (Result, error) {
	start := time.Now()
	res, fresh, err := w.addCheckpoint(ctx, body)
	if err != nil {
		res = Result{Status: http.StatusInternalServerError, Outcome: OutcomeError, Reason: err.Error()}
		res.ContentType, res.Body = "text/plain; charset=utf-8", []byte("internal error\n")
		w.logger.Error("witness could not answer add-checkpoint", "err", err)
	}
	w.metrics.requests.WithLabelValues(string(res.Outcome)).Inc()
	w.metrics.duration.Observe(time.Since(start).Seconds())
	if fresh && w.onEvidence != nil {
		w.onEvidence(*res.Evidence)
	}
	return res, err
}

// addCheckpoint runs the spec's checks in its order. fresh reports a bundle stored now.
func (w *Witness) addCheckpoint(ctx context.Context, body []byte) (res Result, fresh bool, err error) {
	req, err := ParseRequest(body)
	if err != nil {
		return refuse(http.StatusBadRequest, OutcomeMalformed, err.Error()), false, nil
	}
	origin, ok := checkpointOrigin(req.Checkpoint)
	l := w.log(origin)
	if !ok || l == nil {
		return refuse(http.StatusNotFound, OutcomeUnknownLog, fmt.Sprintf("unknown log %q", origin)), false, nil
	}
	c, err := format.ParseCheckpoint(req.Checkpoint, l.verifier)
	if err != nil {
		return checkpointRefusal(err), false, nil
	}
	if req.Old > c.Size {
		return refuse(http.StatusBadRequest, OutcomeMalformed,
			fmt.Sprintf("old size %d is larger than the checkpoint's size %d", req.Old, c.Size)), false, nil
	}
	release, err := l.take(ctx)
	if err != nil {
		return Result{}, false, fmt.Errorf("waiting for the turn of %s: %w", origin, err)
	}
	defer release()
	return w.decide(ctx, l, req, c)
}

// checkpointRefusal maps ParseCheckpoint's error: no signature of the log that verifies is
// 403, anything else about the note is 400.
func checkpointRefusal(err error) Result {
	var unverified *note.UnverifiedNoteError
	if errors.Is(err, format.ErrSignature) || errors.As(err, &unverified) {
		return refuse(http.StatusForbidden, OutcomeBadSignature, err.Error())
	}
	return refuse(http.StatusBadRequest, OutcomeMalformed, err.Error())
}

func refuse(status int, o Outcome, reason string) Result {
	return Result{Status: status, ContentType: "text/plain; charset=utf-8", Body: []byte(reason + "\n"), Outcome: o, Reason: reason}
}

// decide compares the checkpoint with the state and, if it extends it, cosigns and stores.
// It runs in the origin's turn, so the state it reads is the state it replaces.
func (w *Witness) decide(ctx context.Context, l *witnessedLog, req Request, c format.Checkpoint) (Result, bool, error) {
	st, ok, err := w.loadState(c.Origin)
	if err != nil {
		return Result{}, false, err
	}
	if !ok {
		st.root = format.EmptyRoot()
	}
	res, fork, err := w.judge(l, req, c, st)
	if err != nil {
		return Result{}, false, err
	}
	if fork != nil {
		ev, fresh := w.keepEvidence(fork)
		res.Evidence = ev
		return res, fresh, nil
	}
	if res.Status != 0 {
		return res, false, nil
	}
	res, err = w.cosign(ctx, l, req, c)
	return res, false, err
}

// judge returns a refusal (and the fork it shows, if any), or a zero Result to cosign. The
// state of a log never cosigned is size 0, the empty tree.
func (w *Witness) judge(l *witnessedLog, req Request, c format.Checkpoint, st stored) (Result, *format.Equivocation, error) {
	fork, err := w.sameSizeFork(l, req, c)
	if err != nil {
		return Result{}, nil, err
	}
	if req.Old != st.size {
		return Result{Status: http.StatusConflict, ContentType: ContentTypeSize, Outcome: OutcomeConflict,
			Body:   []byte(strconv.FormatUint(st.size, 10) + "\n"),
			Reason: fmt.Sprintf("old size %d, cosigned last at %d", req.Old, st.size)}, fork, nil
	}
	inconsistent := func(reason string) Result {
		return refuse(http.StatusUnprocessableEntity, OutcomeInconsistent, reason)
	}
	switch {
	case c.Size == 0 && c.Root != format.EmptyRoot():
		return inconsistent("a checkpoint of size 0 with a root other than the empty tree's"), nil, nil
	case req.Old == 0 && len(req.Proof) > 0:
		return inconsistent("a consistency proof from size 0"), nil, nil
	case req.Old == c.Size && len(req.Proof) > 0:
		return inconsistent("a consistency proof between equal sizes"), nil, nil
	case req.Old == c.Size && c.Root != st.root:
		return inconsistent(fmt.Sprintf("size %d cosigned already with another root", c.Size)), fork, nil
	case req.Old == c.Size || req.Old == 0:
		return Result{}, nil, nil
	}
	if err := format.VerifyConsistency(st.size, c.Size, req.Proof, st.root, c.Root); err != nil {
		// A proof of the right length that fails between two signed checkpoints is kept as a
		// claim; NewEquivocation refuses any other, so garbage makes no bundle.
		fork, _ := format.NewEquivocation(st.submitted, req.Checkpoint, req.Proof, l.verifier)
		return inconsistent(err.Error()), fork, nil
	}
	return Result{}, nil, nil
}

// sameSizeFork looks up the checkpoint this witness cosigned at c's size, if any: another
// root there is a fork the log signed, whatever the request's old size says, so a rollback to
// a size cosigned before is caught too.
func (w *Witness) sameSizeFork(l *witnessedLog, req Request, c format.Checkpoint) (*format.Equivocation, error) {
	b, ok, err := w.get(historyKey(c.Origin, c.Size))
	if err != nil {
		return nil, fmt.Errorf("reading witness history of %s: %w", c.Origin, err)
	}
	if !ok {
		return nil, nil
	}
	root, submitted, err := decodePast(b)
	if err != nil {
		return nil, fmt.Errorf("reading witness history of %s: %w", c.Origin, err)
	}
	if root == c.Root {
		return nil, nil
	}
	fork, err := format.NewEquivocation(submitted, req.Checkpoint, nil, l.verifier)
	if err != nil {
		// The stored note verified when it was cosigned; failing now means the key changed
		// or the store is damaged. Refuse anyway, without a bundle.
		w.logger.Error("witness history does not make a bundle", "origin", c.Origin, "size", c.Size, "err", err)
		return nil, nil
	}
	return fork, nil
}

// cosign signs c, stores it as the latest state and in the history in one synced batch, and
// only then returns the cosignature.
func (w *Witness) cosign(ctx context.Context, l *witnessedLog, req Request, c format.Checkpoint) (Result, error) {
	now := w.clock().Unix()
	if now <= 0 {
		return Result{}, fmt.Errorf("cosigning %s at size %d: the clock reads %d, before 1970", c.Origin, c.Size, now)
	}
	sig, err := format.SignCosignature(w.name, w.key, c, uint64(now))
	if err != nil {
		return Result{}, fmt.Errorf("cosigning %s at size %d: %w", c.Origin, c.Size, err)
	}
	if err := ctx.Err(); err != nil {
		return Result{}, fmt.Errorf("cosigning %s at size %d: %w", c.Origin, c.Size, err)
	}
	st := stored{size: c.Size, root: c.Root, cosigned: cosignedNote(c, req.Checkpoint, l.verifier, sig), submitted: req.Checkpoint}
	err = w.commit(kvPair{stateKey(c.Origin), st.encode()}, kvPair{historyKey(c.Origin, c.Size), encodePast(c.Root, req.Checkpoint)})
	if err != nil {
		return Result{}, fmt.Errorf("storing the state of %s at size %d: %w", c.Origin, c.Size, err)
	}
	w.metrics.cosignatures.Inc()
	w.logger.Debug("cosigned", "origin", c.Origin, "size", c.Size, "old", req.Old)
	return Result{Status: http.StatusOK, ContentType: "text/plain; charset=utf-8", Outcome: OutcomeCosigned,
		Body: []byte(sig.Line() + "\n")}, nil
}

// cosignedNote is the checkpoint as a monitor should see it: its text, the log's signature
// lines (all verified: note.Open refuses a note with a failing line by a known key) and the
// cosignature. Lines by other keys are left out.
func cosignedNote(c format.Checkpoint, submitted []byte, v note.Verifier, sig format.Cosignature) []byte {
	text := c.Text()
	b := []byte(text + "\n")
	// ParseCheckpoint accepted only this text, so the note is it, a blank line, the signatures.
	sigs := strings.TrimSuffix(string(submitted[len(text)+1:]), "\n")
	seen := map[string]bool{}
	for _, line := range strings.Split(sigs, "\n") {
		if !seen[line] && byLogKey(line, v) {
			seen[line] = true
			b = append(b, line+"\n"...)
		}
	}
	return append(b, sig.Line()+"\n"...)
}

// byLogKey reports whether a signature line names v's key.
func byLogKey(line string, v note.Verifier) bool {
	rest, ok := strings.CutPrefix(line, "\u2014 "+v.Name()+" ")
	if !ok {
		return false
	}
	raw, err := base64.StdEncoding.DecodeString(rest)
	return err == nil && len(raw) >= 4 && binary.BigEndian.Uint32(raw) == v.KeyHash()
}
