package desk

import (
	"github.com/histor-observer/histor/node/peers"
)

// agreementWords say each agreement status; a split is amber on the page,
// as a change is: it says what observers saw, not what a server is.
var agreementWords = map[string]string{
	peers.Unanimous:      "every observer saw the same tool set",
	peers.Split:          "split: observers saw different tool sets at the same time",
	peers.SingleObserver: "one observer has a tool set on record",
	peers.Unobserved:     "no observer has a tool set on record",
}

// toObservers reads the observers and agreement members (node/peers'
// Members, or the same members decoded from a /check answer); own is this
// node's digest, which the others are compared with.
func toObservers(observers []any, agreement map[string]any, own string) ([]Observer, Agreement) {
	out := make([]Observer, 0, len(observers))
	for _, o := range observers {
		m, _ := o.(map[string]any)
		ob := Observer{DID: str(m, "did"), Digest: str(m, "digest"), Status: str(m, "status"),
			ObservedAt: str(m, "observedAt"), LabelID: str(m, "labelId"),
			LeafIndex: uintOf(m["leafIndex"]), HeadSize: uintOf(m["headSize"]), Self: m["self"] == true}
		if ob.Self && ob.Digest != "" {
			own = ob.Digest
		}
		out = append(out, ob)
	}
	for i := range out {
		out[i].Differs = out[i].Digest != "" && own != "" && out[i].Digest != own
	}
	st := str(agreement, "status")
	return out, Agreement{Status: st, Text: agreementWords[st], Split: st == peers.Split}
}

func str(m map[string]any, k string) string {
	s, _ := m[k].(string)
	return s
}

// uintOf reads a count from canon (int64) or encoding/json (float64).
func uintOf(v any) uint64 {
	switch n := v.(type) {
	case int64:
		return uint64(max(n, 0))
	case float64:
		return uint64(max(n, 0))
	}
	return 0
}
