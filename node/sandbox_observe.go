package node

import (
	"context"
	"errors"
	"log/slog"

	"github.com/histor-observer/histor/sandbox/queue"
)

// newLocalObserve makes the local worker's Observe over the sandbox
// observer. It returns the function that releases the observer.
func newLocalObserve(ctx context.Context, c SandboxConfig, log *slog.Logger) (queue.Observe, func() error, error) {
	return nil, nil, errors.New("no sandbox observer in this build: set SandboxConfig.Observe")
}
