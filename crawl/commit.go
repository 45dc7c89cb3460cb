package crawl

import (
	"context"
	"time"

	"github.com/histor-observer/histor/crawl/state"
	hlog "github.com/histor-observer/histor/log"
)

// commitLoop gathers processed targets into batches: one log append for all
// their labels and evidence, then one synced state write for all their
// records. A target's state is written only after its labels are durable,
// so the state never points at a label the log does not hold.
func (c *Crawler) commitLoop(ctx context.Context, in <-chan *prepared, sum *Summary) {
	batch := make([]*prepared, 0, c.cfg.Batch)
	setsStored := false
	for p := range in {
		batch = append(batch[:0], p)
		batch = gather(in, batch, c.cfg.Batch)
		setsStored = c.commit(ctx, batch, sum, setsStored)
	}
}

// batchWait is how long the committer waits for a batch to fill. Each
// append signs a head and syncs, so a few milliseconds of waiting saves
// far more work than it costs; labels are not answered to anyone sooner.
const batchWait = 20 * time.Millisecond

// gather adds to batch what arrives within batchWait, up to max items.
func gather(in <-chan *prepared, batch []*prepared, max int) []*prepared {
	timer := time.NewTimer(batchWait)
	defer timer.Stop()
	for len(batch) < max {
		select {
		case q, ok := <-in:
			if !ok {
				return batch
			}
			batch = append(batch, q)
		case <-timer.C:
			return batch
		}
	}
	return batch
}

// commit appends one batch. If the append is refused, each target is tried
// on its own, so one bad label costs only its own target.
func (c *Crawler) commit(ctx context.Context, batch []*prepared, sum *Summary, setsStored bool) bool {
	if err := c.appendAll(ctx, batch, !setsStored); err != nil {
		c.logger.Warn("batch append failed; appending targets one by one", "targets", len(batch), "error", err)
		for _, p := range batch {
			if err := c.appendAll(ctx, []*prepared{p}, true); err != nil {
				c.logger.Error("appending labels", "target", targetID(p), "error", err)
				p.failed(err, c.now())
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
		setsStored = setsStored || (p.err == nil && len(p.entries) > 0)
	}
	return setsStored
}

// appendAll appends the batch's labels and evidence, with the pattern and
// record sets when withSets (once a crawl: their addresses never change),
// and once they are durable gives each target its label references with
// their leaf indices: one append's labels are consecutive leaves, in the
// order given.
func (c *Crawler) appendAll(ctx context.Context, batch []*prepared, withSets bool) error {
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
	if scans && withSets {
		ev = append(ev, c.setEvidence...)
	}
	first, err := c.log.Append(context.WithoutCancel(ctx), entries, ev)
	if err != nil {
		return err
	}
	leaf := first
	for _, p := range batch {
		p.update.Labels = p.refs
		for i := range p.refs {
			p.refs[i].LeafIndex = leaf
			leaf++
		}
	}
	return nil
}

func targetID(p *prepared) string {
	if p.update.Target != nil {
		return p.update.Target.ID
	}
	return ""
}
