package node

import (
	"context"
	"fmt"
	"net/http"
	"sync"

	"github.com/histor-observer/histor/internal/httpx"
	"github.com/histor-observer/histor/node/webhook"
)

// Bounds of /api/v1/admin/webhooks.
const (
	defaultWebhookLog = 100
	maxWebhookLog     = webhook.LogRecords
)

// webhooks is the node's webhook deliverer and its loop.
type webhooks struct {
	d      *webhook.Deliverer
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// checkNotify validates the notification settings once, at start-up.
func (c *Config) checkNotify() error {
	if c.EventsInterval < 0 {
		return fmt.Errorf("config: EventsInterval must not be negative")
	}
	cfg := webhook.Config{Subscriptions: c.Webhooks}
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("config: Webhooks: %w", err)
	}
	return nil
}

// openWebhooks starts delivering the event store's events to the
// configured subscriptions; without any it opens nothing.
func (n *Node) openWebhooks(ctx context.Context) error {
	if len(n.cfg.Webhooks) == 0 {
		return nil
	}
	d, err := webhook.New(webhook.Config{
		Subscriptions: n.cfg.Webhooks, RootCAs: n.cfg.WebhookRootCAs, Logger: n.cfg.Logger,
		UserAgent: "histor/" + Version + " (security events)",
	}, n.events.store, metaWebhooks)
	if err != nil {
		return err
	}
	lctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	wh := &webhooks{d: d, cancel: cancel}
	wh.wg.Go(func() { d.Run(lctx) })
	n.webhooks = wh
	return nil
}

func (n *Node) closeWebhooks() error {
	if wh := n.webhooks; wh != nil {
		wh.cancel()
		wh.wg.Wait()
		n.webhooks = nil
	}
	return nil
}

// serveWebhookLog answers GET /api/v1/admin/webhooks?limit= for the
// operator: each subscription's place (cursor, failed attempts, next
// attempt, events pending) and its newest delivery records.
func (a *api) serveWebhookLog(w http.ResponseWriter, r *http.Request) {
	if !a.authorizeOperator(w, r) {
		return
	}
	limit := httpx.Uint{Name: "limit"}
	if err := httpx.ReadUints(r.URL.RawQuery, &limit); err != nil {
		a.fail(w, http.StatusBadRequest, err.Error())
		return
	}
	if !limit.Present {
		limit.Value = defaultWebhookLog
	}
	if limit.Value < 1 || limit.Value > maxWebhookLog {
		a.fail(w, http.StatusBadRequest, fmt.Sprintf("limit must be between 1 and %d", maxWebhookLog))
		return
	}
	out := struct {
		Webhooks []webhook.Status `json:"webhooks"`
	}{Webhooks: []webhook.Status{}}
	if a.webhooks != nil {
		var err error
		if out.Webhooks, err = a.webhooks.d.Log(int(limit.Value)); err != nil {
			a.internal(w, r, "reading the webhook log", err)
			return
		}
	}
	w.Header().Set("Cache-Control", "no-store")
	a.writeJSON(w, r, out)
}
