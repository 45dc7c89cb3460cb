package submit_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/histor-observer/histor/internal/promset/promtest"
	"github.com/histor-observer/histor/log/format"
	"github.com/histor-observer/histor/witness/submit"
)

// TestSubmitCosignsAsTheLogGrows: three witnesses cosign each new checkpoint; after the
// first, each request carries a proof from the size it cosigned last.
func TestSubmitCosignsAsTheLogGrows(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, 3, nil)
		var names []string
		for _, w := range e.witnesses {
			names = append(names, w.name)
		}
		for _, grow := range []int{1, 4, 1, 250} {
			res, err := e.submit(grow)
			if err != nil {
				t.Fatalf("size %d: %v", e.log.n, err)
			}
			if got := openCosigned(t, res.Note, e.witnesses); !slices.Equal(got, names) {
				t.Errorf("size %d: cosigned by %v", e.log.n, got)
			}
			if !bytes.Equal(res.Note, e.sub.Latest()) {
				t.Errorf("size %d: Latest is not the result's note", e.log.n)
			}
			for i, o := range res.Outcomes {
				if o.Requests != 1 || o.Cosignature == nil || o.Err != nil {
					t.Errorf("size %d, witness %d: %+v", e.log.n, i, o)
				}
			}
		}
		for _, w := range e.witnesses {
			if size, _ := w.state(); size != 256 || w.requests() != 4 {
				t.Errorf("%s: size %d after %d requests", w.name, size, w.requests())
			}
			last := string(w.bodies[3])
			if !strings.HasPrefix(last, "old 6\n") || strings.Count(strings.SplitN(last, "\n\n", 2)[0], "\n") < 2 {
				t.Errorf("%s: last request %q has no proof from 6", w.name, last)
			}
		}
	})
}

// TestSubmitFollowsSizeOnce: a witness that cosigned size 5 before a restart answers the
// first request (old 0) with 409 and its size; the second request proves from 5.
func TestSubmitFollowsSizeOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, 1, nil)
		w := e.witnesses[0]
		e.log.grow(5)
		w.setState(e.log.head())
		res, err := e.submit(3)
		if err != nil {
			t.Fatal(err)
		}
		if o := res.Outcomes[0]; o.Requests != 2 || o.Cosignature == nil {
			t.Fatalf("outcome %+v", o)
		}
		if !strings.HasPrefix(string(w.bodies[0]), "old 0\n\n") || !strings.HasPrefix(string(w.bodies[1]), "old 5\n") {
			t.Errorf("requests %q", w.bodies)
		}
		// The next submission starts from what was cosigned: one request.
		if res, err := e.submit(1); err != nil || res.Outcomes[0].Requests != 1 {
			t.Errorf("next submission: %+v, %v", res.Outcomes[0], err)
		}
	})
}

// TestSubmitRefusals: each answer the Submitter must not retry, and must not loop on,
// gives its typed error after exactly the requests the rule allows.
func TestSubmitRefusals(t *testing.T) {
	size := func(s string) func(http.ResponseWriter, *http.Request) {
		return status(http.StatusConflict, s, "text/x.tlog.size")
	}
	var (
		inc *submit.InconsistencyError
		st  *submit.StatusError
		ans *submit.AnswerError
	)
	for _, tc := range []struct {
		name     string
		script   []func(http.ResponseWriter, *http.Request)
		requests int
		as       any
	}{
		{"422", []func(http.ResponseWriter, *http.Request){status(422, "bad proof\n", "text/plain")}, 1, &inc},
		{"409 without size type", []func(http.ResponseWriter, *http.Request){status(409, "3\n", "text/plain")}, 1, &inc},
		{"409 twice", []func(http.ResponseWriter, *http.Request){size("2\n"), size("3\n")}, 2, &st},
		{"409 at the old size", []func(http.ResponseWriter, *http.Request){size("0\n")}, 1, &st},
		{"409 beyond the checkpoint", []func(http.ResponseWriter, *http.Request){size("99\n")}, 1, &inc},
		{"409 size not canonical", []func(http.ResponseWriter, *http.Request){size("03\n")}, 1, &ans},
		{"409 size without newline", []func(http.ResponseWriter, *http.Request){size("3")}, 1, &ans},
		{"400", []func(http.ResponseWriter, *http.Request){status(400, "no\n", "text/plain")}, 1, &st},
		{"403", []func(http.ResponseWriter, *http.Request){status(403, "no\n", "text/plain")}, 1, &st},
		{"404", []func(http.ResponseWriter, *http.Request){status(404, "no\n", "text/plain")}, 1, &st},
		{"302", []func(http.ResponseWriter, *http.Request){status(302, "", "text/plain")}, 1, &st},
		{"200 empty", []func(http.ResponseWriter, *http.Request){status(200, "", "text/plain")}, 1, &ans},
		{"200 not a signature", []func(http.ResponseWriter, *http.Request){status(200, "ok\n", "text/plain")}, 1, &ans},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newEnv(t, 1, nil)
				e.witnesses[0].push(tc.script...)
				res, err := e.submit(8)
				if !errors.As(err, tc.as) {
					t.Fatalf("err = %v, want %T", err, tc.as)
				}
				if o := res.Outcomes[0]; o.Requests != tc.requests || o.Cosignature != nil {
					t.Errorf("outcome %+v, want %d requests", o, tc.requests)
				}
				if bytes.Count(res.Note, []byte("\u2014 ")) != 1 {
					t.Errorf("note carries a cosignature:\n%s", res.Note)
				}
			})
		})
	}
}

// TestSubmitInconsistentWitness: a witness holding a fork of the log (same size, other
// root; or a larger tree the proof does not reach) refuses, with 422 or the older 409,
// and the Submitter reports it with what it sent, every time, without retrying.
func TestSubmitInconsistentWitness(t *testing.T) {
	for _, tc := range []struct {
		name     string
		sameSize int
		forkSize int
	}{
		{"same size 422", http.StatusUnprocessableEntity, 8},
		{"same size 409", http.StatusConflict, 8},
		{"smaller fork", http.StatusUnprocessableEntity, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				reg := prometheus.NewRegistry()
				e := newEnv(t, 2, func(c *submit.Config) { c.Registerer = reg })
				forked := e.witnesses[1]
				forked.sameSizeStatus = tc.sameSize
				forked.setState(newTestLog(t, 9).grow(tc.forkSize).head())
				for round := 1; round <= 2; round++ {
					res, err := e.submit(8 - int(e.log.n))
					var inc *submit.InconsistencyError
					if !errors.As(err, &inc) || inc.Witness != forked.name || inc.Old != uint64(tc.forkSize) {
						t.Fatalf("round %d: err = %v", round, err)
					}
					// Round 1 learns the witness's size from a 409 first; round 2 knows it.
					if res.Outcomes[0].Err != nil || res.Outcomes[1].Requests != 3-round {
						t.Errorf("round %d: outcomes %+v", round, res.Outcomes)
					}
					if !bytes.Equal(inc.Checkpoint, e.log.checkpoint()) {
						t.Errorf("round %d: error keeps %q", round, inc.Checkpoint)
					}
					if got := openCosigned(t, res.Note, e.witnesses); !slices.Equal(got, []string{e.witnesses[0].name}) {
						t.Errorf("round %d: cosigned by %v", round, got)
					}
					if n := promtest.Value(t, reg, "histor_witness_submit_inconsistencies_total", "witness", forked.name); n != float64(round) {
						t.Errorf("round %d: inconsistencies metric %v", round, n)
					}
				}
			})
		})
	}
}

// TestSubmitRetriesWithBackoff: 503 and 429 are retried after 100 ms then 200 ms, by the
// fake clock to the nanosecond; a Retry-After lengthens a wait up to MaxBackoff.
func TestSubmitRetriesWithBackoff(t *testing.T) {
	for _, tc := range []struct {
		name    string
		script  []func(http.ResponseWriter, *http.Request)
		elapsed time.Duration
	}{
		{"503 then 429", []func(http.ResponseWriter, *http.Request){status(503, "", "text/plain"), status(429, "", "text/plain")}, 300 * time.Millisecond},
		{"network error", []func(http.ResponseWriter, *http.Request){dropConnection}, 100 * time.Millisecond},
		{"Retry-After", []func(http.ResponseWriter, *http.Request){retryAfter("1")}, time.Second},
		{"Retry-After capped", []func(http.ResponseWriter, *http.Request){retryAfter("3600")}, 2 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newEnv(t, 1, nil)
				e.witnesses[0].push(tc.script...)
				start := time.Now()
				res, err := e.submit(3)
				if err != nil {
					t.Fatal(err)
				}
				if d := time.Since(start); d != tc.elapsed {
					t.Errorf("took %v, want %v", d, tc.elapsed)
				}
				if o := res.Outcomes[0]; o.Requests != len(tc.script)+1 || o.Cosignature == nil {
					t.Errorf("outcome %+v", o)
				}
			})
		})
	}
}

func retryAfter(s string) func(http.ResponseWriter, *http.Request) {
	return func(rw http.ResponseWriter, _ *http.Request) {
		rw.Header().Set("Retry-After", s)
		rw.WriteHeader(http.StatusTooManyRequests)
	}
}

// dropConnection makes memTransport fail the request as a reset connection would.
func dropConnection(http.ResponseWriter, *http.Request) { panic(http.ErrAbortHandler) }

// TestSubmitGivesUp: a witness failing every attempt costs Attempts requests and the
// waits between them, and no more; a hanging one costs Timeout per attempt. The other
// witness, asked in parallel, cosigns regardless.
func TestSubmitGivesUp(t *testing.T) {
	for _, tc := range []struct {
		name    string
		answer  func(http.ResponseWriter, *http.Request)
		elapsed time.Duration
	}{
		{"500", status(500, "down\n", "text/plain"), 100*time.Millisecond + 200*time.Millisecond},
		{"hang", hang, 3*time.Second + 100*time.Millisecond + 200*time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newEnv(t, 2, func(c *submit.Config) { c.Timeout = time.Second })
				e.witnesses[0].push(tc.answer, tc.answer, tc.answer, tc.answer)
				start := time.Now()
				res, err := e.submit(3)
				var un *submit.UnavailableError
				if !errors.As(err, &un) || un.Attempts != 3 {
					t.Fatalf("err = %v", err)
				}
				if d := time.Since(start); d != tc.elapsed {
					t.Errorf("took %v, want %v", d, tc.elapsed)
				}
				if o := res.Outcomes[0]; o.Requests != 3 || e.witnesses[0].requests() != 3 {
					t.Errorf("outcome %+v after %d requests", o, e.witnesses[0].requests())
				}
				if res.Outcomes[1].Cosignature == nil {
					t.Errorf("the other witness: %+v", res.Outcomes[1])
				}
			})
		})
	}
}

// TestSubmitInParallel: three witnesses taking a second each take a second together.
func TestSubmitInParallel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, 3, nil)
		for _, w := range e.witnesses {
			w.delay = time.Second
		}
		start := time.Now()
		if _, err := e.submit(2); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d != time.Second {
			t.Errorf("took %v", d)
		}
	})
}

// TestSubmitCancelled: a cancelled context ends the waits and the requests.
func TestSubmitCancelled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, 1, func(c *submit.Config) { c.Timeout = time.Hour })
		e.witnesses[0].push(hang)
		ctx, cancel := context.WithTimeout(context.Background(), 250*time.Millisecond)
		defer cancel()
		e.log.grow(2)
		start := time.Now()
		_, err := e.sub.Submit(ctx, e.log.checkpoint())
		var un *submit.UnavailableError
		if !errors.As(err, &un) || un.Attempts != 1 {
			t.Fatalf("err = %v", err)
		}
		if d := time.Since(start); d != 250*time.Millisecond {
			t.Errorf("took %v", d)
		}
	})
}

// TestSubmitAnswerLines: only lines by the witness's key count; one that claims its key
// and does not verify spoils the answer.
func TestSubmitAnswerLines(t *testing.T) {
	other := newTestWitness(7)
	for _, tc := range []struct {
		name  string
		extra func(c format.Checkpoint) []string
		ok    bool
	}{
		{"another key's line is ignored", func(c format.Checkpoint) []string {
			s, _ := format.SignCosignature(other.name, other.priv, c, 5)
			return []string{s.Line()}
		}, true},
		{"a line of another kind is ignored", func(format.Checkpoint) []string {
			return []string{"\u2014 w0.test/witness AAAAAA=="}
		}, true},
		{"a bad line by its key spoils it", func(c format.Checkpoint) []string {
			s, _ := format.SignCosignature("w0.test/witness", newTestWitness(0).priv, c, 5)
			s.Signature[0] ^= 1
			return []string{s.Line()}
		}, false},
		{"its key over another checkpoint spoils it", func(c format.Checkpoint) []string {
			c.Size++
			s, _ := format.SignCosignature("w0.test/witness", newTestWitness(0).priv, c, 5)
			return []string{s.Line()}
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newEnv(t, 1, nil)
				e.log.grow(4)
				e.witnesses[0].extraLines = tc.extra(e.log.head())
				res, err := e.sub.Submit(context.Background(), e.log.checkpoint())
				var ans *submit.AnswerError
				if tc.ok != (err == nil) || !tc.ok && !errors.As(err, &ans) {
					t.Fatalf("err = %v", err)
				}
				if want := 1 + btoi(tc.ok); bytes.Count(res.Note, []byte("\u2014 ")) != want {
					t.Errorf("note has other than %d signature lines:\n%s", want, res.Note)
				}
			})
		})
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestSubmitOwnCheckpoints: the Submitter refuses what the log should never send: a
// checkpoint not signed by it, one older than submitted, one forking the submitted.
func TestSubmitOwnCheckpoints(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, 1, nil)
		if _, err := e.submit(5); err != nil {
			t.Fatal(err)
		}
		old := newTestLog(t, 0).grow(3).checkpoint()
		if _, err := e.sub.Submit(context.Background(), old); !errors.Is(err, submit.ErrStale) {
			t.Errorf("older checkpoint: %v", err)
		}
		fork := newTestLog(t, 3).grow(5).checkpoint()
		var inc *format.InconsistencyError
		if _, err := e.sub.Submit(context.Background(), fork); !errors.As(err, &inc) {
			t.Errorf("forked checkpoint: %v", err)
		}
		unsigned := bytes.Replace(e.log.checkpoint(), []byte("\n5\n"), []byte("\n6\n"), 1)
		if _, err := e.sub.Submit(context.Background(), unsigned); !errors.Is(err, format.ErrSignature) {
			t.Errorf("altered checkpoint: %v", err)
		}
		if e.witnesses[0].requests() != 1 {
			t.Errorf("%d requests, want only the first submission's", e.witnesses[0].requests())
		}
		// The same checkpoint again is cosigned again and the newer line kept.
		time.Sleep(time.Minute)
		res, err := e.sub.Submit(context.Background(), e.log.checkpoint())
		if err != nil || res.Outcomes[0].Cosignature == nil || bytes.Count(res.Note, []byte("\u2014 ")) != 2 {
			t.Fatalf("resubmission: %v\n%s", err, res.Note)
		}
		if got, want := res.Outcomes[0].Cosignature.Time, uint64(time.Now().Unix()); got != want {
			t.Errorf("kept cosignature of time %d, want %d", got, want)
		}
	})
}

// TestSubmitWitnessedPolicy: with a 2-of-3 policy, Witnessed moves only when two cosign.
func TestSubmitWitnessedPolicy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		policy := "log " + logVKey(t) + "\n"
		for i, w := range []*testWitness{newTestWitness(0), newTestWitness(1), newTestWitness(2)} {
			policy += "witness " + string(rune('a'+i)) + " " + w.vkey(t) + "\n"
		}
		p, err := format.ParsePolicy([]byte(policy + "group g 2 a b c\nquorum g\n"))
		if err != nil {
			t.Fatal(err)
		}
		e := newEnv(t, 3, func(c *submit.Config) { c.Policy = p })
		res, err := e.submit(2)
		if err != nil || !res.Witnessed || !bytes.Equal(e.sub.Witnessed(), res.Note) {
			t.Fatalf("all up: witnessed %v, %v", res.Witnessed, err)
		}
		first := res.Note
		for _, w := range e.witnesses[:2] {
			w.push(status(403, "", "text/plain"))
		}
		res, _ = e.submit(2)
		if res.Witnessed || !bytes.Equal(e.sub.Witnessed(), first) {
			t.Errorf("one of three: witnessed %v, Witnessed() moved", res.Witnessed)
		}
		if !bytes.Equal(e.sub.Latest(), res.Note) {
			t.Error("Latest is not the newest checkpoint")
		}
		if _, _, err := p.Verify(e.sub.Witnessed()); err != nil {
			t.Errorf("policy does not verify Witnessed: %v", err)
		}
	})
}

// TestSubmitMergesAsAnswersArrive: with a 2-of-3 policy, w0 answering at once, w1 after
// 10 s and w2 after 60 s, Latest carries w0's line while the others are still waiting,
// Witnessed moves when w1 makes the quorum, and Submit returns with all three after 60 s.
// OnCosigned is told of each line.
func TestSubmitMergesAsAnswersArrive(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := policyOf(t, 2, 3)
		var told atomic.Int32
		e := newEnv(t, 3, func(c *submit.Config) {
			c.Policy, c.Timeout = p, 2*time.Minute
			c.OnCosigned = func() { told.Add(1) }
		})
		e.witnesses[1].delay = 10 * time.Second
		e.witnesses[2].delay = 60 * time.Second
		names := func(n int) []string {
			var out []string
			for _, w := range e.witnesses[:n] {
				out = append(out, w.name)
			}
			return out
		}
		done := make(chan submit.Result)
		e.log.grow(4)
		go func() {
			res, err := e.sub.Submit(context.Background(), e.log.checkpoint())
			if err != nil {
				t.Error(err)
			}
			done <- res
		}()
		synctest.Wait()
		if got := openCosigned(t, e.sub.Latest(), e.witnesses); !slices.Equal(got, names(1)) || told.Load() != 1 {
			t.Errorf("at once: Latest cosigned by %v, OnCosigned %d times", got, told.Load())
		}
		if e.sub.Witnessed() != nil {
			t.Errorf("one of three is witnessed:\n%s", e.sub.Witnessed())
		}
		time.Sleep(10 * time.Second)
		synctest.Wait()
		if got := openCosigned(t, e.sub.Latest(), e.witnesses); !slices.Equal(got, names(2)) || told.Load() != 2 {
			t.Errorf("after 10 s: Latest cosigned by %v, OnCosigned %d times", got, told.Load())
		}
		if w := e.sub.Witnessed(); !bytes.Equal(w, e.sub.Latest()) {
			t.Errorf("after 10 s: Witnessed is not Latest:\n%s", w)
		} else if _, _, err := p.Verify(w); err != nil {
			t.Errorf("after 10 s: policy does not verify Witnessed: %v", err)
		}
		select {
		case <-done:
			t.Fatal("Submit returned before the last witness answered")
		default:
		}
		start := time.Now()
		res := <-done
		if d := time.Since(start); d != 50*time.Second {
			t.Errorf("Submit returned %v after the second answer, want 50s", d)
		}
		if got := openCosigned(t, res.Note, e.witnesses); !slices.Equal(got, names(3)) || !res.Witnessed || told.Load() != 3 {
			t.Errorf("result cosigned by %v, witnessed %v, OnCosigned %d times", got, res.Witnessed, told.Load())
		}
		if !bytes.Equal(e.sub.Latest(), res.Note) || !bytes.Equal(e.sub.Witnessed(), res.Note) {
			t.Error("Latest or Witnessed is not the result's note")
		}
	})
}

// TestSubmitLateAnswerForOlderCheckpoint: a slow witness's cosignature of a checkpoint a
// newer one has replaced goes into that submission's Result, never into Latest.
func TestSubmitLateAnswerForOlderCheckpoint(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, 2, func(c *submit.Config) { c.Timeout = time.Minute })
		slow := e.witnesses[1]
		slow.delay = 10 * time.Second
		first := make(chan submit.Result)
		e.log.grow(2)
		go func() {
			res, _ := e.sub.Submit(context.Background(), e.log.checkpoint())
			first <- res
		}()
		synctest.Wait()
		e.log.grow(3)
		second := make(chan submit.Result)
		go func() {
			res, _ := e.sub.Submit(context.Background(), e.log.checkpoint())
			second <- res
		}()
		synctest.Wait()
		time.Sleep(10 * time.Second) // the slow witness answers for size 2
		res := <-first
		if got := openCosigned(t, res.Note, e.witnesses); len(got) != 2 {
			t.Errorf("size 2 result cosigned by %v", got)
		}
		latest := e.sub.Latest()
		if got := openCosigned(t, latest, e.witnesses); !slices.Equal(got, []string{e.witnesses[0].name}) {
			t.Errorf("size 5 Latest cosigned by %v:\n%s", got, latest)
		}
		if !bytes.HasPrefix(latest, e.log.checkpoint()) {
			t.Errorf("Latest is not the size 5 checkpoint:\n%s", latest)
		}
		res = <-second
		if got := openCosigned(t, res.Note, e.witnesses); len(got) != 2 || !bytes.Equal(e.sub.Latest(), res.Note) {
			t.Errorf("size 5 result cosigned by %v", got)
		}
	})
}

// policyOf is a policy of the test log and witnesses w0..w(n-1), k of them a quorum.
func policyOf(t *testing.T, k, n int) *format.Policy {
	t.Helper()
	text := "log " + logVKey(t) + "\n"
	var names []string
	for i := range n {
		name := string(rune('a' + i))
		text += "witness " + name + " " + newTestWitness(i).vkey(t) + "\n"
		names = append(names, name)
	}
	p, err := format.ParsePolicy([]byte(text + "group g " + strconv.Itoa(k) + " " + strings.Join(names, " ") + "\nquorum g\n"))
	if err != nil {
		t.Fatal(err)
	}
	return p
}
