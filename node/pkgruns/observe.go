package pkgruns

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/histor-observer/histor/sandbox/observer"
	"github.com/histor-observer/histor/sandbox/queue"
)

// ObserveJobs is a worker's Observe over the sandbox observer o: it
// observes the job's package and sends the observation back. A run that
// ended in an infrastructure status (busy, sandbox-unavailable,
// inspection-failed) says nothing of the package, so it is an error: the
// job goes back for another delivery, perhaps on another host, and after
// the last one the node records it as poisoned.
func ObserveJobs(o *observer.Observer) queue.Observe {
	return func(ctx context.Context, job queue.Job) (queue.Result, error) {
		obs, err := o.Observe(ctx, job.Target, observer.Options{Env: job.Env, Limits: &job.Limits})
		if err != nil {
			return queue.Result{}, fmt.Errorf("observing %s: %w", job.Target, err)
		}
		if err := ctx.Err(); err != nil {
			// Cut short (the worker is stopping): what was seen is partial and
			// must not stand as the record of this version. The job goes back.
			return queue.Result{}, fmt.Errorf("observing %s: %w", job.Target, err)
		}
		if obs.Status.Infrastructure() {
			return queue.Result{}, fmt.Errorf("observing %s: %s: %s", job.Target, obs.Status, obs.Detail)
		}
		b, err := json.Marshal(obs)
		if err != nil {
			return queue.Result{}, fmt.Errorf("encoding the observation of %s: %w", job.Target, err)
		}
		return queue.Result{Observation: b}, nil
	}
}
