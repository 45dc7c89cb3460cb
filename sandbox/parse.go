package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/histor-observer/histor/log/canon"
)

// MaxObservationBytes bounds an observation ParseObservation reads: the
// tools (at most 16 MiB of stdout) and the bounded records.
const MaxObservationBytes = 24 << 20

// ParseObservation decodes an observation sent by a worker. The tools are
// parsed as the crawler parses them (canon, numbers MTL/1 refuses kept as
// canon.RefusedNumber), so the node digests exactly what the server sent.
func ParseObservation(b []byte) (*Observation, error) {
	if len(b) > MaxObservationBytes {
		return nil, fmt.Errorf("parsing observation: %d bytes, more than %d", len(b), MaxObservationBytes)
	}
	type plain Observation
	var o struct {
		plain
		Tools      json.RawMessage `json:"tools,omitempty"`
		ServerInfo json.RawMessage `json:"serverInfo,omitempty"`
	}
	if err := json.Unmarshal(b, &o); err != nil {
		return nil, fmt.Errorf("parsing observation: %w", err)
	}
	obs := Observation(o.plain)
	if obs.Type != Type {
		return nil, fmt.Errorf("parsing observation: type %q", obs.Type)
	}
	if len(o.ServerInfo) > 0 { // may hold a number only canon keeps (1e400)
		v, err := canon.ParseDeferringNumbers(o.ServerInfo, canon.Limits{MaxDepth: 64, MaxBytes: len(o.ServerInfo) + 1})
		if err != nil {
			return nil, fmt.Errorf("parsing observation serverInfo: %w", err)
		}
		obs.ServerInfo = v
	}
	if len(o.Tools) > 0 {
		v, err := canon.ParseDeferringNumbers(o.Tools, canon.Limits{MaxDepth: 64, MaxBytes: len(o.Tools) + 1})
		if err != nil {
			return nil, fmt.Errorf("parsing observation tools: %w", err)
		}
		tools, ok := v.([]any)
		if !ok {
			return nil, errors.New("parsing observation: tools is not an array")
		}
		obs.Tools = tools
	}
	return &obs, nil
}
