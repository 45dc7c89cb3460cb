package witness

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"

	"github.com/histor-observer/histor/log/format"
)

const (
	// MaxProofLines is the tlog-witness bound on consistency proof lines in a request.
	MaxProofLines = 63
	// MaxBodyBytes bounds an add-checkpoint body: a checkpoint of at most
	// format.MaxCheckpointBytes (omniwitness's whole-body cap) plus room for the old line and
	// a full proof, so every request this witness could accept fits.
	MaxBodyBytes = format.MaxCheckpointBytes + 4<<10
)

// Request is a parsed add-checkpoint body (c2sp.org/tlog-witness).
type Request struct {
	Old        uint64     // the size the client believes this witness cosigned last
	Proof      [][32]byte // the consistency proof from Old to the checkpoint's size
	Checkpoint []byte     // the signed checkpoint note, as sent
}

// Marshal renders r as the body of an add-checkpoint request.
func (r Request) Marshal() []byte {
	b := strconv.AppendUint([]byte("old "), r.Old, 10)
	b = append(b, '\n')
	for _, h := range r.Proof {
		b = base64.StdEncoding.AppendEncode(b, h[:])
		b = append(b, '\n')
	}
	b = append(b, '\n')
	return append(b, r.Checkpoint...)
}

// ParseRequest parses an add-checkpoint body strictly: "old <size>" in canonical decimal, at
// most MaxProofLines hashes in canonical standard base64, each line ending in "\n", an empty
// line, then a non-empty checkpoint note, which it does not open (AddCheckpoint does, with the
// log's key). Whatever it accepts, Marshal gives back byte for byte.
func ParseRequest(body []byte) (Request, error) {
	var r Request
	if len(body) > MaxBodyBytes {
		return r, fmt.Errorf("parsing request: longer than %d bytes", MaxBodyBytes)
	}
	line, rest, ok := bytes.Cut(body, []byte("\n"))
	if !ok {
		return r, errors.New("parsing request: no old size line")
	}
	old, ok := bytes.CutPrefix(line, []byte("old "))
	n, err := strconv.ParseUint(string(old), 10, 64)
	if !ok || err != nil || strconv.FormatUint(n, 10) != string(old) {
		return r, errors.New("parsing request: old size line is not \"old <canonical decimal>\"")
	}
	r.Old = n
	for {
		line, rest, ok = bytes.Cut(rest, []byte("\n"))
		if !ok {
			return r, errors.New("parsing request: no empty line before the checkpoint")
		}
		if len(line) == 0 {
			break
		}
		if len(r.Proof) == MaxProofLines {
			return r, fmt.Errorf("parsing request: more than %d proof lines", MaxProofLines)
		}
		h, err := decodeHash(line)
		if err != nil {
			return r, fmt.Errorf("parsing request: proof line %d: %w", len(r.Proof)+1, err)
		}
		r.Proof = append(r.Proof, h)
	}
	if len(rest) == 0 {
		return r, errors.New("parsing request: no checkpoint")
	}
	r.Checkpoint = rest
	return r, nil
}

func decodeHash(s []byte) ([32]byte, error) {
	raw, err := base64.StdEncoding.Strict().DecodeString(string(s))
	if err != nil || len(raw) != 32 || base64.StdEncoding.EncodeToString(raw) != string(s) {
		return [32]byte{}, errors.New("not 32 bytes of canonical standard base64")
	}
	return [32]byte(raw), nil
}

// checkpointOrigin is the first line of a checkpoint note, where its origin is, read before
// the note is opened so the witness knows which key to open it with.
func checkpointOrigin(note []byte) (string, bool) {
	origin, _, ok := bytes.Cut(note, []byte("\n"))
	return string(origin), ok && len(origin) > 0
}
