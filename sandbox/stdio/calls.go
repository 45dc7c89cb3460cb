package stdio

import (
	"errors"
	"strings"
	"time"

	"github.com/histor-observer/histor/log/canon"
	"github.com/histor-observer/histor/sandbox"
)

// Outcome statuses of one call (HISTOR's names).
const (
	OutcomeSuccess = "success"
	OutcomeError   = "error"
	OutcomeTimeout = "timeout"
	OutcomeSkipped = "skipped"
)

// calls is the calls phase: the first MaxCalls tools, each called once.
// Tools past MaxCalls, and tools skipped, count as skipped; only a result
// with a content array and no isError counts as successful.
func (s *session) calls(res *Result, c Canary) {
	cov := &res.Calls
	cov.Total = len(res.Tools)
	n := min(max(s.cfg.MaxCalls, 0), len(res.Tools))
	for i := 0; i < n; i++ {
		if time.Now().After(s.deadline) || s.ended || s.ctx.Err() != nil {
			for _, t := range res.Tools[i:n] {
				cov.Outcomes = append(cov.Outcomes, sandbox.CallOutcome{Tool: toolName(t), Status: OutcomeSkipped, Reason: s.whyNot()})
			}
			break
		}
		cov.Outcomes = append(cov.Outcomes, s.callOne(res, res.Tools[i], c))
	}
	for _, o := range cov.Outcomes {
		switch o.Status {
		case OutcomeSuccess:
			cov.Successful++
		case OutcomeError:
			cov.Errors++
		case OutcomeTimeout:
			cov.Timeouts++
		}
	}
	cov.Attempted = cov.Successful + cov.Errors + cov.Timeouts
	cov.Skipped = cov.Total - cov.Attempted
	cov.Complete = cov.Successful == cov.Total
}

func (s *session) whyNot() string {
	switch {
	case s.ctx.Err() != nil:
		return "cancelled by the caller"
	case s.ended:
		return "the server's stdout ended"
	}
	return "the session deadline passed"
}

func toolName(t any) string {
	m, _ := t.(map[string]any)
	name, _ := m["name"].(string)
	return clip(name, 200)
}

// callOne calls one tool and keeps its answer.
func (s *session) callOne(res *Result, tool any, c Canary) sandbox.CallOutcome {
	m, _ := tool.(map[string]any)
	name, ok := m["name"].(string)
	out := sandbox.CallOutcome{Tool: clip(name, 200), Status: OutcomeSkipped}
	if !ok || name == "" {
		out.Reason = "the tool has no name"
		return out
	}
	args, err := c.Arguments(m["inputSchema"])
	if err != nil {
		out.Reason = clip(err.Error(), 200)
		return out
	}
	start := time.Now()
	msg, err := s.call("tools/call", map[string]any{"name": name, "arguments": args}, start.Add(s.cfg.CallTimeout))
	out.Seconds = roundSeconds(time.Since(start))
	var st *stop
	switch {
	case errors.As(err, &st) && st.status == sandbox.StatusTimeout:
		out.Status, out.Reason = OutcomeTimeout, clip(st.detail, 200)
	case err != nil:
		out.Status, out.Reason = OutcomeError, clip(err.Error(), 200)
	default:
		out.Status, out.Reason = judge(msg)
		res.Answers = append(res.Answers, answer(out.Tool, msg, s.cfg.MaxAnswerBytes))
	}
	return out
}

// judge says whether a call answer is a success: a result object with a
// content array and isError not true.
func judge(msg map[string]any) (string, string) {
	if _, ok := msg["error"]; ok {
		return OutcomeError, "JSON-RPC error"
	}
	r, ok := msg["result"].(map[string]any)
	if !ok {
		return OutcomeError, "result is not an object"
	}
	if _, ok := r["content"].([]any); !ok {
		return OutcomeError, "result has no content array"
	}
	if r["isError"] == true {
		return OutcomeError, "the tool reported an error"
	}
	return OutcomeSuccess, ""
}

// answer keeps what a call answered, bounded.
func answer(tool string, msg map[string]any, limit int) Answer {
	body, ok := msg["result"]
	if !ok {
		body = msg["error"]
	}
	var texts []string
	if r, ok := body.(map[string]any); ok {
		content, _ := r["content"].([]any)
		for _, c := range content {
			if item, ok := c.(map[string]any); ok && item["type"] == "text" {
				if t, ok := item["text"].(string); ok {
					texts = append(texts, t)
				}
			}
		}
	}
	a := Answer{Tool: tool}
	a.Text, a.Truncated = bounded(strings.Join(texts, "\n"), limit)
	b, err := canon.Encode(body)
	if err != nil {
		b = []byte(`"(answer holds a number canon refuses)"`)
	}
	var cut bool
	a.JSON, cut = bounded(string(b), limit)
	a.Truncated = a.Truncated || cut
	return a
}

func bounded(s string, limit int) (string, bool) {
	if len(s) <= limit {
		return s, false
	}
	return clip(s, limit), true
}

func roundSeconds(d time.Duration) float64 {
	return float64(d.Round(time.Millisecond)) / float64(time.Second)
}
