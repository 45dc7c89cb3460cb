// Package events keeps a node's security events: signed
// histor.security-event/v1 documents in HISTOR's shape, each given a cursor
// (1, 2, 3… in the order they were recorded, never reused) when it is
// appended, and durable before Append returns. A subscriber pages through
// them after a cursor it kept (/api/v1/security-events), reads the newest
// as a feed, or receives them as webhooks; the webhook deliveries keep
// their own state in the same store (Meta).
//
// It is a small Pebble database of its own, beside the crawl state: an
// event is derived from a fact another store recorded (a change record, a
// split in the peer view, an equivocation bundle) and can be derived again,
// so the event's id (the SHA-256 of its unsigned body) makes appending it
// twice a no-op.
package events
