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
	var err error
	if obs.ServerInfo, err = deferred(o.ServerInfo, "serverInfo"); err != nil { // may hold a 1e400 only canon keeps
		return nil, err
	}
	tools, err := deferred(o.Tools, "tools")
	if err != nil {
		return nil, err
	}
	if tools != nil {
		if obs.Tools, _ = tools.([]any); obs.Tools == nil {
			return nil, errors.New("parsing observation: tools is not an array")
		}
	}
	return &obs, nil
}

// deferred parses one member as the crawler parses what a server sends:
// canon, numbers MTL/1 refuses kept as canon.RefusedNumber; nil when absent.
func deferred(raw json.RawMessage, member string) (any, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	v, err := canon.ParseDeferringNumbers(raw, canon.Limits{MaxDepth: 64, MaxBytes: len(raw) + 1})
	if err != nil {
		return nil, fmt.Errorf("parsing observation %s: %w", member, err)
	}
	return v, nil
}
