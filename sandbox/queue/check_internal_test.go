package queue

import (
	"encoding/json"
	"testing"
)

// TestCheckObservation: a result's observation is checked on the members
// that bind it to its job only, so numbers no float64 holds do not make it
// unreadable, and an unknown or empty status is refused.
func TestCheckObservation(t *testing.T) {
	const target = "npm:x@1.0.0"
	for name, tc := range map[string]struct {
		obs string
		ok  bool
	}{
		"ok":         {`{"type":"histor.package-observation/v1","package":"npm:x@1.0.0","status":"ok","serverInfo":{"n":1e400},"tools":[{"name":"a","inputSchema":{"maximum":1e400}}]}`, true},
		"other pkg":  {`{"type":"histor.package-observation/v1","package":"npm:y@1.0.0","status":"ok"}`, false},
		"no status":  {`{"type":"histor.package-observation/v1","package":"npm:x@1.0.0","status":""}`, false},
		"made up":    {`{"type":"histor.package-observation/v1","package":"npm:x@1.0.0","status":"fine"}`, false},
		"poisoned":   {`{"type":"histor.package-observation/v1","package":"npm:x@1.0.0","status":"poisoned"}`, false},
		"wrong type": {`{"type":"x","package":"npm:x@1.0.0","status":"ok"}`, false},
		"not an obj": {`[]`, false},
	} {
		err := checkObservation(json.RawMessage(tc.obs), target)
		if (err == nil) != tc.ok {
			t.Errorf("%s: %v, want ok=%v", name, err, tc.ok)
		}
	}
}
