package submit

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/histor-observer/histor/log/clip"
	"github.com/histor-observer/histor/log/format"
)

// sizeType is the media type of a 409 answer that names the witness's size.
const sizeType = "text/x.tlog.size"

// answer is a witness's HTTP answer, read whole (up to maxAnswerBytes).
type answer struct {
	status      int
	contentType string
	retryAfter  time.Duration
	body        []byte
}

// submission is one checkpoint's way to one witness.
type submission struct {
	s   *Submitter
	w   *witnessState
	c   format.Checkpoint
	raw []byte
	out Outcome
}

// submitTo runs one witness's part of a submission, holding its turn throughout.
func (s *Submitter) submitTo(ctx context.Context, w *witnessState, c format.Checkpoint, raw []byte) Outcome {
	w.turn <- struct{}{}
	defer func() { <-w.turn }()
	start := time.Now()
	sub := &submission{s: s, w: w, c: c, raw: raw, out: Outcome{Witness: w.Witness}}
	sig, err := sub.run(ctx)
	sub.out.Cosignature, sub.out.Err, sub.out.Elapsed = sig, err, time.Since(start)
	s.metrics.submission(w.Cosigner.Name, err, sub.out.Elapsed, w.acked)
	s.logOutcome(w, c, sub.out)
	return sub.out
}

// run posts from the witness's last known size; a 409 naming another size is followed
// once, at that size, with a new proof.
func (sub *submission) run(ctx context.Context) (*format.Cosignature, error) {
	if sub.w.acked > sub.c.Size {
		return nil, fmt.Errorf("witness %s has cosigned size %d: %w", sub.w.Cosigner.Name, sub.w.acked, ErrStale)
	}
	followed := false
	for {
		old := sub.w.acked
		proof, err := sub.proof(old)
		if err != nil {
			return nil, err
		}
		a, err := sub.post(ctx, requestBody(old, proof, sub.raw))
		if err != nil {
			return nil, err
		}
		switch {
		case a.status == http.StatusOK:
			return sub.accept(a)
		case a.status == http.StatusConflict && a.contentType == sizeType:
			if err := sub.follow(a, old, followed); err != nil {
				return nil, err
			}
			followed = true
		case a.status == http.StatusConflict || a.status == http.StatusUnprocessableEntity:
			return nil, sub.inconsistency(a, old, proof)
		default:
			return nil, sub.statusError(a)
		}
	}
}

// follow takes a 409's size as the witness's, unless it is the second 409 of this
// submission, or names the size just sent. A size beyond this checkpoint is an
// inconsistency: the log never shrinks and submits its newest checkpoint, so the witness
// holds a larger tree signed by the log's key that the log does not have.
func (sub *submission) follow(a answer, old uint64, followed bool) error {
	size, err := parseSize(a.body)
	if err != nil {
		return &AnswerError{Witness: sub.w.Cosigner.Name, URL: sub.w.URL, Reason: "409: " + err.Error()}
	}
	sub.w.acked = size
	switch {
	case size > sub.c.Size:
		return sub.inconsistency(a, old, nil)
	case followed || size == old:
		return sub.statusError(a)
	}
	return nil
}

func (sub *submission) inconsistency(a answer, old uint64, proof [][32]byte) error {
	return &InconsistencyError{Witness: sub.w.Cosigner.Name, URL: sub.w.URL, Status: a.status,
		Body: clip.String(string(a.body), clipBody), Old: old, Proof: proof, Checkpoint: bytes.Clone(sub.raw)}
}

// parseSize reads a text/x.tlog.size body: a canonical decimal and a newline.
func parseSize(body []byte) (uint64, error) {
	s, ok := strings.CutSuffix(string(body), "\n")
	n, err := strconv.ParseUint(s, 10, 64)
	if !ok || err != nil || strconv.FormatUint(n, 10) != s {
		return 0, fmt.Errorf("size %q is not a decimal line", clip.String(string(body), 32))
	}
	return n, nil
}

func (sub *submission) statusError(a answer) error {
	return &StatusError{Witness: sub.w.Cosigner.Name, URL: sub.w.URL, Status: a.status, Body: clip.String(string(a.body), clipBody)}
}

// proof is the consistency proof from old to the checkpoint; none from 0 or to the same size.
func (sub *submission) proof(old uint64) ([][32]byte, error) {
	if old == 0 || old == sub.c.Size {
		return nil, nil
	}
	p, err := sub.s.cfg.Proof(old, sub.c.Size)
	if err != nil {
		return nil, fmt.Errorf("getting consistency proof from %d to %d for witness %s: %w", old, sub.c.Size, sub.w.Cosigner.Name, err)
	}
	if len(p) > maxProofLines {
		return nil, fmt.Errorf("consistency proof from %d to %d has %d hashes, tlog-witness allows %d", old, sub.c.Size, len(p), maxProofLines)
	}
	return p, nil
}

// requestBody is tlog-witness's add-checkpoint body: the old size, the proof, an empty
// line and the checkpoint.
func requestBody(old uint64, proof [][32]byte, checkpoint []byte) []byte {
	b := fmt.Appendf(nil, "old %d\n", old)
	for _, h := range proof {
		b = base64.StdEncoding.AppendEncode(b, h[:])
		b = append(b, '\n')
	}
	b = append(b, '\n')
	return append(b, checkpoint...)
}

// post makes up to Attempts requests, waiting between them, until one is answered with
// something other than 5xx or 429.
func (sub *submission) post(ctx context.Context, body []byte) (answer, error) {
	cfg := &sub.s.cfg
	wait := cfg.Backoff
	var last error
	for attempt := 1; ; attempt++ {
		a, err := sub.postOnce(ctx, body)
		if err == nil && !retryable(a.status) {
			return a, nil
		}
		if err == nil {
			err = fmt.Errorf("answer %d %q", a.status, clip.String(string(a.body), clipBody))
		}
		last = err
		if attempt == cfg.Attempts || ctx.Err() != nil {
			return answer{}, &UnavailableError{Witness: sub.w.Cosigner.Name, URL: sub.w.URL, Attempts: attempt, Err: last}
		}
		d := min(max(wait, a.retryAfter), cfg.MaxBackoff)
		sub.s.log.Warn("witness submission failed, retrying", "witness", sub.w.Cosigner.Name, "size", sub.c.Size,
			"attempt", attempt, "wait", d, "err", err)
		if err := sleep(ctx, d); err != nil {
			return answer{}, &UnavailableError{Witness: sub.w.Cosigner.Name, URL: sub.w.URL, Attempts: attempt, Err: last}
		}
		wait = min(2*wait, cfg.MaxBackoff)
	}
}

func retryable(status int) bool {
	return status >= 500 || status == http.StatusTooManyRequests
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// postOnce makes one request under its own timeout and reads the answer whole.
func (sub *submission) postOnce(ctx context.Context, body []byte) (answer, error) {
	ctx, cancel := context.WithTimeout(ctx, sub.s.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, sub.w.URL+"/add-checkpoint", bytes.NewReader(body))
	if err != nil {
		return answer{}, fmt.Errorf("making request: %w", err)
	}
	req.Header.Set("Content-Type", "text/plain; charset=utf-8")
	sub.out.Requests++
	start := time.Now()
	resp, err := sub.s.client.Do(req)
	if err != nil {
		sub.s.metrics.request(sub.w.Cosigner.Name, "error", time.Since(start))
		return answer{}, fmt.Errorf("posting: %w", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes+1))
	sub.s.metrics.request(sub.w.Cosigner.Name, strconv.Itoa(resp.StatusCode), time.Since(start))
	if err != nil {
		return answer{}, fmt.Errorf("reading answer: %w", err)
	}
	if len(b) > maxAnswerBytes {
		return answer{}, fmt.Errorf("answer beyond %d bytes", maxAnswerBytes)
	}
	ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	return answer{status: resp.StatusCode, contentType: ct, retryAfter: retryAfter(resp), body: b}, nil
}

// retryAfter reads a Retry-After in seconds; the HTTP-date form is ignored.
func retryAfter(resp *http.Response) time.Duration {
	n, err := strconv.ParseUint(resp.Header.Get("Retry-After"), 10, 32)
	if err != nil {
		return 0
	}
	return time.Duration(n) * time.Second
}

// accept checks a 200 answer: signature lines, each ending in a newline; lines by other
// keys, or not cosignature/v1, are ignored (a witness may sign with several); at least
// one line must be the witness's key's and every such line must verify over the
// checkpoint. The newest of them is kept.
func (sub *submission) accept(a answer) (*format.Cosignature, error) {
	fail := func(reason string) (*format.Cosignature, error) {
		return nil, &AnswerError{Witness: sub.w.Cosigner.Name, URL: sub.w.URL, Reason: reason}
	}
	text, ok := strings.CutSuffix(string(a.body), "\n")
	if !ok {
		return fail("not newline-terminated signature lines")
	}
	var best *format.Cosignature
	for _, line := range strings.Split(text, "\n") {
		if !strings.HasPrefix(line, "\u2014 ") {
			return fail(fmt.Sprintf("%q is not a signature line", clip.String(line, 64)))
		}
		s, err := format.ParseCosignature(line)
		if err != nil || !sub.w.Cosigner.Matches(s) {
			continue
		}
		if err := sub.w.Cosigner.Verify(sub.c, s); err != nil {
			return fail(err.Error())
		}
		if best == nil || s.Time > best.Time {
			best = &s
		}
	}
	if best == nil {
		return fail("no line by its key")
	}
	sub.w.acked = sub.c.Size
	return best, nil
}

// logOutcome logs a submission: inconsistencies loudly, as they may be evidence of a fork.
func (s *Submitter) logOutcome(w *witnessState, c format.Checkpoint, o Outcome) {
	args := []any{"witness", w.Cosigner.Name, "url", w.URL, "size", c.Size, "requests", o.Requests, "elapsed", o.Elapsed}
	var inc *InconsistencyError
	switch {
	case o.Err == nil:
		s.log.Debug("witness cosigned checkpoint", args...)
	case errors.As(o.Err, &inc):
		s.log.Error("witness reports an inconsistent checkpoint", append(args, "status", inc.Status, "old", inc.Old, "answer", inc.Body)...)
	case errors.Is(o.Err, ErrStale):
		s.log.Debug("witness is past this checkpoint", append(args, "err", o.Err)...)
	default:
		s.log.Warn("witness did not cosign checkpoint", append(args, "err", o.Err)...)
	}
}
