package node

import (
	"context"
	"fmt"

	"github.com/histor-observer/histor/node/webhook"
)

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

// openWebhooks starts delivering the security events to the configured
// subscriptions; without any it opens nothing.
func (n *Node) openWebhooks(ctx context.Context) error {
	wh, err := n.events.OpenWebhooks(ctx, webhook.Config{
		Subscriptions: n.cfg.Webhooks, RootCAs: n.cfg.WebhookRootCAs, Logger: n.cfg.Logger,
		UserAgent: "histor/" + Version + " (security events)",
	})
	if err != nil {
		return err
	}
	n.webhooks = wh
	return nil
}

func (n *Node) closeWebhooks() error {
	err := n.webhooks.Close()
	n.webhooks = nil
	return err
}
