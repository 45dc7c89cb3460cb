package desk

import "github.com/histor-observer/histor/node/desklog"

// LogView is the Log page (/log): the latest head, its checkpoint with
// the cosignatures, the witness policy and a picture of the tree, all
// readable without script; the page's own script (/static/log.js) adds
// the check a reader's browser does for itself.
type LogView struct {
	Head       *LogHead // nil before the first label
	Checkpoint string   // the checkpoint note, with the cosignatures collected
	Witness    LogWitness
	Picture    *desklog.Drawing // nil when it could not be drawn
	PictureErr string           // why, in words, when Picture is nil
}

// LogHead is the latest signed head, in words and in full.
type LogHead struct {
	Size               uint64
	SizeText           string // Size with thousands separators
	Root               string // hex
	Time               string
	Log                string // the log key's did:key
	VerificationMethod string
	Signature          string // base64url
	STH                string // the document as /api/v1/log/sth serves it
}

// LogWitness is the checkpoint read under the node's witness policy.
type LogWitness struct {
	Configured bool // false: no witness is configured, no policy applies
	Quorum     string
	Met        bool
	Listed     int
	Cosigned   int
	Witnesses  []LogWitnessRow
	Problem    string // why the checkpoint could not be read under the policy
}

// LogWitnessRow is one witness of the policy.
type LogWitnessRow struct {
	Name, KeyName string
	Cosigned      bool
}
