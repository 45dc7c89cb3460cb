package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// auditResult is one `histor audit` of one node from the outside.
type auditResult struct {
	At    time.Duration
	Node  int
	Tiles bool
	Code  int    // 0 pass, 1 the log misbehaved, 2 could not complete
	Out   string // its last line
}

// auditAll audits every running node that is not stopped, keeping each node's verified
// head in its state file, so each audit also proves the log consistent with the last
// one, across the restart and the stop.
func (s *soak) auditAll(ctx context.Context, tiles bool) {
	for _, p := range s.nodes {
		if p.hasExited() || p.isPaused() {
			continue
		}
		r := audit(ctx, s.o.bin, p, filepath.Join(s.dir, "audit", fmt.Sprintf("node-%d.json", p.n)), tiles)
		r.At = s.since()
		s.audits = append(s.audits, r)
		kind := "histor audit"
		if tiles {
			kind += " --tiles"
		}
		s.record(p.n, "%s: exit %d (%s)", kind, r.Code, r.Out)
	}
}

func audit(ctx context.Context, bin string, p *nodeProc, state string, tiles bool) auditResult {
	args := []string{"audit", p.base(), "--state", state, "--deadline", "10m"}
	if tiles {
		args = append(args, "--tiles")
	}
	out, err := runHistor(ctx, bin, 11*time.Minute, args...)
	return auditResult{Node: p.n, Tiles: tiles, Code: exitCode(err), Out: auditSummary(out)}
}

// auditSummary is the gist of histor audit's output: from the JSON report of a passing
// audit its size, consistency and tiles; else its last line.
func auditSummary(out []byte) string {
	var rep struct {
		TreeSize    uint64 `json:"treeSize"`
		Empty       bool   `json:"empty"`
		Consistency string `json:"consistency"`
		Tiles       *struct {
			Entries      uint64 `json:"entries"`
			HashTiles    int    `json:"hashTiles"`
			EntryBundles int    `json:"entryBundles"`
		} `json:"tiles"`
	}
	start := bytes.IndexByte(out, '{')
	if start < 0 || json.Unmarshal(out[start:], &rep) != nil {
		return lastLine(out)
	}
	s := fmt.Sprintf("size %d", rep.TreeSize)
	if rep.Empty {
		s += ", empty"
	}
	if rep.Consistency != "" {
		s += ", consistency " + rep.Consistency
	}
	if t := rep.Tiles; t != nil {
		s += fmt.Sprintf(", %d entries in %d bundles and %d hash tiles read", t.Entries, t.EntryBundles, t.HashTiles)
	}
	return s
}

// fsckResult is one `histor log fsck` of a stopped node.
type fsckResult struct {
	code int
	out  string
}

func fsck(ctx context.Context, bin string, p *nodeProc) fsckResult {
	out, err := runHistor(ctx, bin, 15*time.Minute, "log", "fsck", "--data", p.data)
	return fsckResult{code: exitCode(err), out: lastLine(out)}
}

func lastLine(out []byte) string {
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// finalChecks is what the soak read of the nodes at the end.
type finalChecks struct {
	nodes []nodeFinal
}

// nodeFinal is one node at the end: what it holds of the federation, how it stopped,
// what fsck said, what its log said.
type nodeFinal struct {
	evidence int // equivocation bundles it serves
	evErr    string
	cosigs   int // cosignatures on its latest checkpoint
	mirrors  []mirrorStatus
	stop     stopResult
	fsck     fsckResult
	logs     logSummary
}

// readFinal reads p's evidence list, checkpoint and mirrors.
func (s *soak) readFinal(ctx context.Context, p *nodeProc) nodeFinal {
	var f nodeFinal
	if p.hasExited() {
		return f
	}
	var ev struct {
		Evidence []struct {
			Origin string `json:"origin"`
			Kind   string `json:"kind"`
		} `json:"evidence"`
	}
	if err := getJSON(ctx, p.base()+"/api/v1/evidence", 30*time.Second, &ev); err != nil {
		f.evErr = strings.ReplaceAll(err.Error(), p.base(), "")
	}
	f.evidence = len(ev.Evidence)
	if code, body, err := get(ctx, p.base()+"/log/checkpoint", 30*time.Second); err == nil && code == 200 {
		_, f.cosigs, _ = checkpointSize(body)
	}
	var ms struct {
		Mirrors []mirrorStatus `json:"mirrors"`
	}
	getJSON(ctx, p.base()+"/api/v1/mirrors", 30*time.Second, &ms)
	f.mirrors = ms.Mirrors
	return f
}

// tail is the last n lines of a file, for an error message.
func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	lines := bytes.Split(bytes.TrimSpace(b), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}
