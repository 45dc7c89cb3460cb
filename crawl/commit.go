package crawl

import (
	"context"

	"github.com/histor-observer/histor/crawl/state"
	hlog "github.com/histor-observer/histor/log"
)

// commitLoop gathers processed targets into batches: one log append for all
// their labels and evidence, then one synced state write for all their
// records. A target's state is written only after its labels are durable,
// so the state never points at a label the log does not hold.
func (c *Crawler) commitLoop(ctx context.Context, in <-chan *prepared, sum *Summary) {
	batch := make([]*prepared, 0, c.cfg.Batch)
	for p := range in {
		batch = append(batch[:0], p)
	drain:
		for len(batch) < c.cfg.Batch {
			select {
			case q, ok := <-in:
				if !ok {
					break drain
				}
				batch = append(batch, q)
			default:
				break drain
			}
		}
		c.commit(ctx, batch, sum)
	}
}

// commit appends one batch. If the append is refused, each target is tried
// on its own, so one bad label costs only its own target.
func (c *Crawler) commit(ctx context.Context, batch []*prepared, sum *Summary) {
	if err := c.appendAll(ctx, batch); err != nil {
		c.logger.Warn("batch append failed; appending targets one by one", "targets", len(batch), "error", err)
		for _, p := range batch {
			if err := c.appendAll(ctx, []*prepared{p}); err != nil {
				c.logger.Error("appending labels", "target", targetID(p), "error", err)
				p.err = err
				p.entries = nil
				p.update.Observation, p.update.Change = nil, nil
			}
		}
	}
	ups := make([]state.Update, 0, len(batch))
	for _, p := range batch {
		ups = append(ups, p.update)
	}
	if err := c.st.CommitAll(ups); err != nil {
		c.logger.Error("writing crawl state", "targets", len(batch), "error", err)
	}
	for _, p := range batch {
		sum.add(p)
		c.cfg.Progress.step(p.status)
	}
}

func (c *Crawler) appendAll(ctx context.Context, batch []*prepared) error {
	var entries []hlog.Entry
	var ev []hlog.Evidence
	scans := false
	for _, p := range batch {
		entries = append(entries, p.entries...)
		ev = append(ev, p.evidence...)
		scans = scans || len(p.entries) > 0
	}
	if len(entries) == 0 && len(ev) == 0 {
		return nil
	}
	if scans {
		// Scan and name labels cite the sets by digest; storing them with
		// every batch that may hold such a label costs two small bodies.
		ev = append(ev, c.setEvidence...)
	}
	_, err := c.log.Append(context.WithoutCancel(ctx), entries, ev)
	return err
}

func targetID(p *prepared) string {
	if p.update.Target != nil {
		return p.update.Target.ID
	}
	return ""
}
