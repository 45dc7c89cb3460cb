package webhook

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/histor-observer/histor/node/events"
)

// Headers of a delivery, HISTOR's.
const (
	HeaderEventID   = "X-Histor-Event-ID"
	HeaderTimestamp = "X-Histor-Timestamp"
	HeaderSignature = "X-Histor-Signature"
)

// Outcomes in the delivery log.
const (
	Delivered = "delivered" // a 2xx answer: the cursor moved past the event
	Retry     = "retry"     // failed; tried again at NextAttempt
	Abandoned = "abandoned" // failed MaxAttempts times, or too large to send: the cursor moved past it
	Skipped   = "skipped"   // the subscription lagged more than MaxPending events: the oldest were passed over
)

// Store is the part of the event store a Deliverer uses. *events.Store
// satisfies it.
type Store interface {
	Page(after uint64, limit int, watch []string) ([]events.Item, error)
	Last() uint64
	Appended() <-chan struct{}
	Meta(name string, v any) error
	SetMeta(name string, v any) error
	DeleteMeta(name string) error
	EachMeta(prefix string, fn func(name string, v []byte) error) error
}

// State is one subscription's place: written after every attempt.
type State struct {
	URL         string    `json:"url"`
	Cursor      uint64    `json:"cursor"`   // the last event delivered (or given up)
	Attempts    int       `json:"attempts"` // failed attempts at the event after Cursor
	NextAttempt time.Time `json:"nextAttempt,omitzero"`
	LogSeq      uint64    `json:"logSeq"` // the last delivery record written
}

// Record is one line of the delivery log.
type Record struct {
	Seq         uint64    `json:"seq"`
	At          time.Time `json:"at"`
	Cursor      uint64    `json:"cursor"`
	EventID     string    `json:"eventId,omitempty"`
	Attempt     int       `json:"attempt"` // 1 for the first try at this event
	Status      int       `json:"status,omitempty"`
	Error       string    `json:"error,omitempty"`
	Outcome     string    `json:"outcome"`
	NextAttempt time.Time `json:"nextAttempt,omitzero"`
}

// Deliverer sends the events of one Store to the configured subscriptions.
type Deliverer struct {
	cfg    Config
	store  Store
	prefix string // the Meta names it owns begin so
	client *http.Client
}

// New returns a Deliverer over store for a validated cfg; its records are
// the Meta names under prefix.
func New(cfg Config, store Store, prefix string) (*Deliverer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Deliverer{cfg: cfg, store: store, prefix: prefix, client: cfg.client()}, nil
}

func (d *Deliverer) stateName(s Subscription) string { return d.prefix + s.ID() + "/state" }
func (d *Deliverer) logName(s Subscription, seq uint64) string {
	return d.prefix + s.ID() + "/log/" + fmt.Sprintf("%016x", seq)
}

// Run delivers until ctx is done: each subscription's next event when it
// is due, then it sleeps until the earliest due retry or a new event.
func (d *Deliverer) Run(ctx context.Context) {
	for {
		appended := d.store.Appended()
		wait := time.Duration(-1) // none due: wait for an event
		for _, s := range d.cfg.Subscriptions {
			due, err := d.Step(ctx, s)
			if err != nil && ctx.Err() == nil {
				d.cfg.Logger.Error("delivering webhook", "subscription", s.ID(), "err", err)
				due = time.Now().Add(baseBackoff)
			}
			if !due.IsZero() {
				if w := max(0, time.Until(due)); wait < 0 || w < wait {
					wait = w
				}
			}
		}
		if !d.sleep(ctx, wait, appended) {
			return
		}
	}
}

func (d *Deliverer) sleep(ctx context.Context, wait time.Duration, appended <-chan struct{}) bool {
	var timer <-chan time.Time
	if wait >= 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
		timer = t.C
	}
	select {
	case <-ctx.Done():
		return false
	case <-timer:
	case <-appended:
	}
	return true
}

// Step makes at most one attempt for s and returns when s is due again:
// zero when it has no event left (it is due at the next append), now when
// more wait.
func (d *Deliverer) Step(ctx context.Context, s Subscription) (due time.Time, err error) {
	st, err := d.state(s)
	if err != nil {
		return time.Time{}, err
	}
	now := time.Now()
	if st.NextAttempt.After(now) {
		return st.NextAttempt, nil
	}
	if last := d.store.Last(); last > st.Cursor+uint64(d.cfg.MaxPending) {
		skip := last - uint64(d.cfg.MaxPending)
		rec := Record{At: now, Cursor: skip, Outcome: Skipped, Error: fmt.Sprintf("%d events passed over", skip-st.Cursor)}
		st.Cursor, st.Attempts = skip, 0
		return now, d.write(s, st, rec)
	}
	items, err := d.store.Page(st.Cursor, 1, nil)
	if err != nil || len(items) == 0 {
		return time.Time{}, err
	}
	rec := d.attempt(ctx, s, items[0], st.Attempts+1, now)
	switch {
	case rec.Outcome == Delivered || rec.Outcome == Abandoned:
		st.Cursor, st.Attempts, st.NextAttempt = items[0].Cursor, 0, time.Time{}
	case rec.Attempt >= d.cfg.MaxAttempts:
		rec.Outcome = Abandoned
		st.Cursor, st.Attempts, st.NextAttempt = items[0].Cursor, 0, time.Time{}
	default:
		st.Attempts = rec.Attempt
		st.NextAttempt = now.Add(Backoff(rec.Attempt))
		rec.NextAttempt = st.NextAttempt
	}
	if err := d.write(s, st, rec); err != nil {
		return time.Time{}, err
	}
	if st.NextAttempt.IsZero() {
		return now, nil
	}
	return st.NextAttempt, nil
}

// state reads s's place; a subscription seen for the first time starts at
// cursor 0, as HISTOR's do, so it receives every event the node holds (at
// most MaxPending of them).
func (d *Deliverer) state(s Subscription) (State, error) {
	var st State
	err := d.store.Meta(d.stateName(s), &st)
	if errors.Is(err, events.ErrNotFound) {
		st = State{URL: s.URL}
		return st, d.store.SetMeta(d.stateName(s), st)
	}
	return st, err
}

// write records the attempt, then the place it leaves s in, and drops the
// log record that fell out of the kept window. A crash between the two
// writes delivers the event again: at least once, never never.
func (d *Deliverer) write(s Subscription, st State, rec Record) error {
	st.LogSeq++
	rec.Seq = st.LogSeq
	if err := d.store.SetMeta(d.logName(s, rec.Seq), rec); err != nil {
		return err
	}
	if err := d.store.SetMeta(d.stateName(s), st); err != nil {
		return err
	}
	if rec.Seq > LogRecords {
		return d.store.DeleteMeta(d.logName(s, rec.Seq-LogRecords))
	}
	return nil
}

// attempt POSTs one event and says how it went.
func (d *Deliverer) attempt(ctx context.Context, s Subscription, it events.Item, n int, now time.Time) Record {
	var ev struct {
		ID string `json:"id"`
	}
	rec := Record{At: now, Cursor: it.Cursor, Attempt: n, Outcome: Retry}
	if err := json.Unmarshal(it.Event, &ev); err != nil || len(it.Event) > MaxPayload {
		rec.Outcome, rec.Error = Abandoned, "event unreadable or larger than the payload bound"
		return rec
	}
	rec.EventID = ev.ID
	status, err := d.post(ctx, s, ev.ID, it.Event, now)
	rec.Status = status
	switch {
	case err != nil:
		rec.Error = err.Error()
	case status >= 200 && status < 300:
		rec.Outcome = Delivered
	default:
		rec.Error = "answered " + strconv.Itoa(status)
	}
	return rec
}

func (d *Deliverer) post(ctx context.Context, s Subscription, id string, payload []byte, now time.Time) (int, error) {
	ts := strconv.FormatInt(now.Unix(), 10)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.URL, bytes.NewReader(payload))
	if err != nil {
		return 0, fmt.Errorf("making request: %w", err)
	}
	h := req.Header
	h.Set("Content-Type", "application/json")
	h.Set(HeaderEventID, id)
	h.Set(HeaderTimestamp, ts)
	h.Set(HeaderSignature, "sha256="+Sign(s.Secret, ts, payload))
	if d.cfg.UserAgent != "" {
		h.Set("User-Agent", d.cfg.UserAgent)
	}
	resp, err := d.client.Do(req)
	if err != nil {
		return 0, fmt.Errorf("posting: %w", err)
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, io.LimitReader(resp.Body, maxResponse))
	return resp.StatusCode, nil
}

// Sign is the hex HMAC-SHA256 under secret of timestamp "." payload: what
// X-Histor-Signature carries after "sha256=". A receiver recomputes it over
// the exact bytes it received and compares in constant time.
func Sign(secret, timestamp string, payload []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(timestamp))
	m.Write([]byte{'.'})
	m.Write(payload)
	return hex.EncodeToString(m.Sum(nil))
}

// Status is one subscription as the operator's delivery log shows it.
type Status struct {
	ID         string   `json:"id"`
	URL        string   `json:"url"`
	State      State    `json:"state"`
	Pending    uint64   `json:"pending"`    // events after the cursor
	Deliveries []Record `json:"deliveries"` // newest first
}

// Log returns every subscription's place and up to limit of its newest
// delivery records.
func (d *Deliverer) Log(limit int) ([]Status, error) {
	out := make([]Status, 0, len(d.cfg.Subscriptions))
	for _, s := range d.cfg.Subscriptions {
		st := Status{ID: s.ID(), URL: s.URL, Deliveries: []Record{}}
		if err := d.store.Meta(d.stateName(s), &st.State); err != nil && !errors.Is(err, events.ErrNotFound) {
			return nil, err
		}
		st.Pending = d.store.Last() - min(st.State.Cursor, d.store.Last())
		var all []Record
		err := d.store.EachMeta(d.prefix+s.ID()+"/log/", func(_ string, v []byte) error {
			var r Record
			if err := json.Unmarshal(v, &r); err != nil {
				return fmt.Errorf("decoding delivery record: %w", err)
			}
			all = append(all, r)
			return nil
		})
		if err != nil {
			return nil, err
		}
		for i := len(all) - 1; i >= 0 && len(st.Deliveries) < limit; i-- {
			st.Deliveries = append(st.Deliveries, all[i])
		}
		out = append(out, st)
	}
	return out, nil
}
