package views

import "github.com/histor-observer/histor/log/awr"

// methodShort are HISTOR's short method names, sent beside each label.
var methodShort = map[string]string{
	awr.MethodObservation: "observation",
	awr.MethodPatternScan: "pattern-scan",
	awr.MethodContinuity:  "continuity",
	awr.MethodNameThreat:  "name-threat",
}

// ShortMethod is HISTOR's short name of a label's method id; an id it has
// no name for is its own.
func ShortMethod(id string) string {
	if s, ok := methodShort[id]; ok {
		return s
	}
	return id
}
