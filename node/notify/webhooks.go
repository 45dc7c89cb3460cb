package notify

import (
	"context"
	"fmt"
	"sync"

	"github.com/histor-observer/histor/node/webhook"
)

// Webhooks is the webhook deliverer of the part's events and its loop.
type Webhooks struct {
	d      *webhook.Deliverer
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// OpenWebhooks starts delivering p's events to cfg's subscriptions; it runs
// until Close, whatever becomes of ctx. Without any subscription it opens
// nothing and answers nil.
func (p *Part) OpenWebhooks(ctx context.Context, cfg webhook.Config) (*Webhooks, error) {
	if len(cfg.Subscriptions) == 0 {
		return nil, nil
	}
	d, err := webhook.New(cfg, p.store, metaWebhooks)
	if err != nil {
		return nil, fmt.Errorf("making the webhook deliverer: %w", err)
	}
	lctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	wh := &Webhooks{d: d, cancel: cancel}
	wh.wg.Go(func() { d.Run(lctx) })
	return wh, nil
}

// Close stops the deliveries and waits for the one in progress. A nil
// Webhooks has nothing to close.
func (wh *Webhooks) Close() error {
	if wh == nil {
		return nil
	}
	wh.cancel()
	wh.wg.Wait()
	return nil
}

// Log is each subscription's place and its newest delivery records, at most
// limit of them; empty for a nil Webhooks.
func (wh *Webhooks) Log(limit int) ([]webhook.Status, error) {
	if wh == nil {
		return []webhook.Status{}, nil
	}
	return wh.d.Log(limit)
}
