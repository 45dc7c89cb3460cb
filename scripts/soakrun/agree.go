package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// agreementResult is what the nodes said of the sampled servers after the churn ended.
type agreementResult struct {
	frozenAt   time.Duration   // when the churn ended, since the start
	crawled    []time.Duration // per node: since the start, when its first crawl begun after the freeze had finished; 0 none
	sample     []endpoint
	converged  bool
	after      time.Duration // from the freeze until every check held, or until the soak gave up
	rounds     int
	nodes      []nodeAgreement
	crossNode  int      // sampled servers every node's view gives the same one digest
	splits     []int    // per node, /api/v1/servers?state=split total at the last round
	examples   []string // a few of the disagreements of the last round
	setupError string
}

// nodeAgreement counts, over the sample, what one node's view said.
type nodeAgreement struct {
	Checked   int // servers read
	Observers int // listing exactly the three observers, each with a digest
	Unanimous int // agreement "unanimous" over the three
	Same      int // /check with the tools the server serves now answered "same", unanimous
}

// settle ends the churn, waits until every node has crawled once since, and then until
// every node's view of the sample agrees (or a bound passes).
func (s *soak) settle(ctx context.Context) {
	now := time.Now()
	s.churn.freeze(now)
	s.frozen = now
	a := &s.agreement
	a.frozenAt = s.since()
	s.record(0, "churn ended: every server up and unchanged from now on")
	a.sample = s.pickSample(now)
	tools, err := s.sampleTools(ctx, a.sample)
	if err != nil {
		a.setupError = err.Error()
		return
	}
	s.waitCrawled(ctx, now)
	s.waitAgreement(ctx, tools)
}

// pickSample chooses up to -agree-sample servers, evenly spread, among those that were
// neither changed nor down within the last crawl interval before the freeze.
func (s *soak) pickSample(frozen time.Time) []endpoint {
	quiet := frozen.Add(-s.o.interval)
	var eligible []endpoint
	for _, e := range s.fleet.endpoints() {
		if e.changedAt.Before(quiet) && e.downAt.Before(quiet) && e.upAt.Before(quiet) {
			eligible = append(eligible, e)
		}
	}
	n := min(s.o.agreeSample, len(eligible))
	out := make([]endpoint, 0, n)
	for k := range n {
		out = append(out, eligible[k*len(eligible)/n])
	}
	return out
}

// sampleTools lists the tools each sampled server serves, as an MCP client receives them.
func (s *soak) sampleTools(ctx context.Context, eps []endpoint) ([]json.RawMessage, error) {
	c := mcp.NewClient(&mcp.Implementation{Name: "histor-soak", Version: "1"}, nil)
	out := make([]json.RawMessage, len(eps))
	for i, e := range eps {
		sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		sess, err := c.Connect(sctx, &mcp.StreamableClientTransport{Endpoint: e.url, DisableStandaloneSSE: true, MaxRetries: -1}, nil)
		if err != nil {
			cancel()
			return nil, fmt.Errorf("connecting to %s for its tools: %w", e.url, err)
		}
		res, err := sess.ListTools(sctx, nil)
		sess.Close()
		cancel()
		if err != nil {
			return nil, fmt.Errorf("listing the tools of %s: %w", e.url, err)
		}
		if out[i], err = json.Marshal(res.Tools); err != nil {
			return nil, fmt.Errorf("encoding the tools of %s: %w", e.url, err)
		}
	}
	return out, nil
}

// waitCrawled waits until every node has finished a crawl that began after frozen.
func (s *soak) waitCrawled(ctx context.Context, frozen time.Time) {
	a := &s.agreement
	a.crawled = make([]time.Duration, len(s.nodes))
	limit := time.Now().Add(3*s.o.interval + 5*time.Minute)
	for time.Now().Before(limit) && ctx.Err() == nil && s.crashed() == "" {
		pending := 0
		for i, p := range s.nodes {
			if a.crawled[i] == 0 && crawledSince(ctx, p, frozen) {
				a.crawled[i] = s.since()
				s.record(p.n, "finished a crawl begun after the churn ended")
			}
			if a.crawled[i] == 0 {
				pending++
			}
		}
		if pending == 0 {
			return
		}
		sleep(ctx, 5*time.Second)
	}
}

// crawledSince says whether p's last crawl began after t (whole seconds) and finished.
func crawledSince(ctx context.Context, p *nodeProc, t time.Time) bool {
	var st stats
	if err := getJSON(ctx, p.base()+"/api/v1/stats", 10*time.Second, &st); err != nil || st.LastRun == nil {
		return false
	}
	started, err := time.Parse(apiTime, st.LastRun.StartedAt)
	return err == nil && st.LastRun.FinishedAt != nil && started.After(t.Truncate(time.Second))
}

// waitAgreement checks the sample on every node each 5 s until every check holds, or for
// up to 3 minutes plus two mirror polls.
func (s *soak) waitAgreement(ctx context.Context, tools []json.RawMessage) {
	a := &s.agreement
	limit := time.Now().Add(3*time.Minute + 10*time.Second)
	for {
		a.rounds++
		if s.agreeRound(ctx, tools) {
			a.converged = true
			break
		}
		if !time.Now().Before(limit) || ctx.Err() != nil || s.crashed() != "" {
			break
		}
		sleep(ctx, 5*time.Second)
	}
	a.after = time.Since(s.frozen)
	verdict := "every check held"
	if !a.converged {
		verdict = "the checks did not all hold"
	}
	s.record(0, "agreement of %d sampled servers: %s after %d rounds", len(a.sample), verdict, a.rounds)
}

// agreeRound reads the sample on every node once and says whether every check held.
func (s *soak) agreeRound(ctx context.Context, tools []json.RawMessage) bool {
	a := &s.agreement
	a.nodes = make([]nodeAgreement, len(s.nodes))
	a.splits = make([]int, len(s.nodes))
	a.examples = nil
	views := make([][]string, len(s.nodes)) // per node, the digest its view gives each sampled server
	var wg sync.WaitGroup
	for i, p := range s.nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			views[i], a.nodes[i], a.splits[i] = s.readNode(ctx, p, tools)
		}()
	}
	wg.Wait()
	a.crossNode = 0
	for k, e := range a.sample {
		digests := map[string]bool{}
		for i := range s.nodes {
			digests[views[i][k]] = true
		}
		if len(digests) == 1 && !digests[""] {
			a.crossNode++
		} else {
			s.example(fmt.Sprintf("%s: the nodes' views give %d digests", e.name, len(digests)))
		}
	}
	ok := a.crossNode == len(a.sample)
	for i := range s.nodes {
		n := a.nodes[i]
		ok = ok && a.splits[i] == 0 && n.Observers == len(a.sample) && n.Unanimous == n.Observers && n.Same == n.Observers
	}
	return ok
}

// readNode reads every sampled server on p (nothing when p does not answer /health at
// once): the digest its view gives each, the counts, and its split total.
func (s *soak) readNode(ctx context.Context, p *nodeProc, tools []json.RawMessage) ([]string, nodeAgreement, int) {
	a := &s.agreement
	digests := make([]string, len(a.sample))
	var n nodeAgreement
	if code, _, err := get(ctx, p.base()+"/health", 5*time.Second); err != nil || code != http.StatusOK {
		s.example(fmt.Sprintf("node %d does not answer /health (%d, %v)", p.n, code, s.quiet(p, err)))
		return digests, n, -1
	}
	dids := map[string]bool{}
	for _, q := range s.nodes {
		dids[q.did] = true
	}
	for k, e := range a.sample {
		digests[k] = s.checkServer(ctx, p, e, tools[k], dids, &n)
	}
	return digests, n, splitTotal(ctx, p)
}

// serverView is what the soak reads of /api/v1/servers/<id>.
type serverView struct {
	Observers []struct {
		DID    string `json:"did"`
		Digest string `json:"digest"`
		Status string `json:"status"`
	} `json:"observers"`
	Agreement struct {
		Status string `json:"status"`
	} `json:"agreement"`
}

// checkServer reads e on p, counts what held into n and returns the one digest p's view
// gives e ("" when it does not give exactly one).
func (s *soak) checkServer(ctx context.Context, p *nodeProc, e endpoint, tools json.RawMessage, dids map[string]bool, n *nodeAgreement) string {
	n.Checked++
	var v serverView
	if err := getJSON(ctx, p.base()+"/api/v1/servers/"+e.id(), 10*time.Second, &v); err != nil {
		s.example(fmt.Sprintf("node %d, %s: %v", p.n, e.name, s.quiet(p, err)))
		return ""
	}
	digest := viewDigest(v, dids)
	if digest != "" {
		n.Observers++
	} else {
		s.example(fmt.Sprintf("node %d, %s: %d observers listed, not the three with one digest each", p.n, e.name, len(v.Observers)))
	}
	if v.Agreement.Status == "unanimous" {
		n.Unanimous++
	}
	if match, agreement := checkAnswer(ctx, p, e, tools); match == "same" && agreement == "unanimous" {
		n.Same++
	} else {
		s.example(fmt.Sprintf("node %d, %s: /check answered %q, agreement %q", p.n, e.name, match, agreement))
	}
	return digest
}

func (s *soak) example(what string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.agreement.examples) < 5 {
		s.agreement.examples = append(s.agreement.examples, what)
	}
}

// quiet is err without the node's loopback address, which names nothing in a report.
func (s *soak) quiet(p *nodeProc, err error) string {
	if err == nil {
		return "no error"
	}
	return strings.ReplaceAll(err.Error(), p.base(), "")
}

// viewDigest is the digest the view's observers share when they are exactly the three
// nodes, each with a digest, all the same; else "".
func viewDigest(v serverView, dids map[string]bool) string {
	if len(v.Observers) != len(dids) {
		return ""
	}
	digest := v.Observers[0].Digest
	seen := map[string]bool{}
	for _, o := range v.Observers {
		if !dids[o.DID] || seen[o.DID] || o.Digest == "" || o.Digest != digest {
			return ""
		}
		seen[o.DID] = true
	}
	return digest
}

// checkAnswer posts the tools e serves to p's /api/v1/check and returns the match and the
// agreement status of the answer.
func checkAnswer(ctx context.Context, p *nodeProc, e endpoint, tools json.RawMessage) (string, string) {
	body, _ := json.Marshal(map[string]any{"endpoint": e.url, "tools": tools})
	code, b, err := do(ctx, http.MethodPost, p.base()+"/api/v1/check", body, 10*time.Second)
	if err != nil || code != http.StatusOK {
		return fmt.Sprintf("error %d %v", code, err), ""
	}
	var ans struct {
		Match     string `json:"match"`
		Agreement struct {
			Status string `json:"status"`
		} `json:"agreement"`
	}
	if err := json.Unmarshal(b, &ans); err != nil {
		return "undecodable answer", ""
	}
	return ans.Match, ans.Agreement.Status
}

// splitTotal is how many servers p lists in a split view, -1 when unread.
func splitTotal(ctx context.Context, p *nodeProc) int {
	var page struct {
		Total int `json:"total"`
	}
	if err := getJSON(ctx, p.base()+"/api/v1/servers?state=split&limit=1", 10*time.Second, &page); err != nil {
		return -1
	}
	return page.Total
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}
