package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/histor-observer/histor/crawl/registry/registrytest"
	"github.com/histor-observer/histor/log/awr"
	"github.com/histor-observer/histor/log/mtl"
)

// fleet is one registry of many MCP servers, which every node of a federation crawls.
type fleet struct {
	servers []*mcp.Server
	names   []string
	urls    []string
	tools   []int
	reg     string
}

func newFleet(t *testing.T, n int) *fleet {
	t.Helper()
	f := &fleet{}
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	var entries []registrytest.Entry
	for i := range n {
		s := mcp.NewServer(&mcp.Implementation{Name: "fleet-" + strconv.Itoa(i), Version: "1"}, nil)
		f.servers, f.tools = append(f.servers, s), append(f.tools, 0)
		f.add(i)
		path := "/mcp/" + strconv.Itoa(i)
		mux.Handle(path, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{Stateless: true}))
		name := fmt.Sprintf("io.example/fleet-%d", i)
		f.names, f.urls = append(f.names, name), append(f.urls, srv.URL+path)
		entries = append(entries, registrytest.Entry{Name: name, Remotes: []registrytest.Remote{{Type: "streamable-http", URL: srv.URL + path}}})
	}
	f.reg = registrytest.Server(t, entries).URL
	return f
}

// add gives server i one more tool: a change of its definitions.
func (f *fleet) add(i int) {
	f.tools[i]++
	f.servers[i].AddTool(&mcp.Tool{Name: fmt.Sprintf("tool-%d", f.tools[i]), Description: "Tool " + strconv.Itoa(f.tools[i]) + ".",
		InputSchema: &jsonschema.Schema{Type: "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { panic("a tool was called") })
}

func (f *fleet) id(i int) string { return mtl.ServerID(f.names[i], f.urls[i]) }

func (p *fedProc) did() string { return awr.DIDKey(p.logPub()) }

// crawlFleet starts a crawl of p and waits until it ended having grown the log.
func (p *fedProc) crawlFleet(t *testing.T) {
	t.Helper()
	before := p.treeSize(t)
	req, _ := http.NewRequest(http.MethodPost, p.url()+"/api/v1/admin/crawl", nil)
	req.Header.Set("x-histor-operator", operatorToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("%s: POST /api/v1/admin/crawl: %d", p.name, resp.StatusCode)
	}
	within(t, 60*time.Second, p.name+" crawled", func() error {
		if size := p.treeSize(t); size <= before {
			return fmt.Errorf("tree size %d", size)
		}
		return nil
	})
}

// seen is what the node at p says each observer saw of server id: did → label id.
func seen(t *testing.T, p *fedProc, id string) (map[string]string, error) {
	resp, err := http.Get(p.url() + "/api/v1/servers/" + id)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var page struct {
		Observers []struct {
			DID     string `json:"did"`
			LabelID string `json:"labelId"`
		} `json:"observers"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&page); err != nil || resp.StatusCode != 200 {
		return nil, fmt.Errorf("%s /api/v1/servers/%s: %d %v", p.name, id, resp.StatusCode, err)
	}
	out := map[string]string{}
	for _, o := range page.Observers {
		out[o.DID] = o.LabelID
	}
	return out, nil
}

// holds waits until the node at p holds, for every server of ids, each of observers'
// own current label of it; it returns how long that took.
func holds(t *testing.T, bound time.Duration, p *fedProc, ids []string, observers ...*fedProc) time.Duration {
	t.Helper()
	want := map[string]map[string]string{}
	for _, id := range ids {
		want[id] = map[string]string{}
		for _, o := range observers {
			s, err := seen(t, o, id)
			if err != nil || s[o.did()] == "" {
				t.Fatalf("%s's own observation of %s: %v %v", o.name, id, s, err)
			}
			want[id][o.did()] = s[o.did()]
		}
	}
	return within(t, bound, p.name+" holds the others' observations", func() error {
		for _, id := range ids {
			s, err := seen(t, p, id)
			if err != nil {
				return err
			}
			for did, label := range want[id] {
				if s[did] != label {
					return fmt.Errorf("server %s: %s holds label %q of %s, want %q", id, p.name, s[did], did, label)
				}
			}
		}
		return nil
	})
}

func (p *fedProc) signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	if err := p.srv.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
}

func portOf(multiaddr string) string {
	parts := strings.Split(multiaddr, "/")
	return parts[len(parts)-1]
}

// TestMirrorHeals runs three `histor serve` processes over one registry on loopback. Each
// node's view of the others' observations is read out of its mirrors of their logs, so a
// node that was stopped, killed or cut off converges from the next checkpoint it reads,
// with nobody crawling again.
func TestMirrorHeals(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three histor processes with libp2p hosts on loopback; skipped under -short")
	}
	fl := newFleet(t, 24)
	a := newFedProc(t, "a", "a.mirror.example/log", "", tcpAddr(t))
	b := newFedProc(t, "b", "b.mirror.example/log", "", tcpAddr(t))
	c := newFedProc(t, "c", "c.mirror.example/log", "", tcpAddr(t))
	// d reaches b alone, yet counts a: it reads a's log from b's mirror of it.
	d := newFedProc(t, "d", "d.mirror.example/log", "", tcpAddr(t))
	procs := []*fedProc{a, b, c}
	descs := map[*fedProc]string{}
	for _, p := range append(procs, d) {
		p.registry = fl.reg
		descs[p] = p.descriptor(t)
	}
	b.extra = append(b.extra, "--peer", descs[d])
	d.extra = append(d.extra, "--peer", descs[b], "--allow-observer", a.did(), "--mirror-poll", "1s")
	for _, p := range procs {
		for _, q := range procs {
			if q != p {
				p.extra = append(p.extra, "--peer", descs[q])
			}
		}
		p.extra = append(p.extra, "--mirror-poll", "1s")
		p.start(t)
	}
	var all []string
	for i := range fl.servers {
		all = append(all, fl.id(i))
	}
	for _, p := range procs {
		p.crawlFleet(t)
	}
	for _, p := range procs {
		var others []*fedProc
		for _, q := range procs {
			if q != p {
				others = append(others, q)
			}
		}
		took := holds(t, 30*time.Second, p, all, others...)
		t.Logf("%s holds every observation of the others %v after the crawls", p.name, took.Round(time.Millisecond))
	}

	t.Run("counted through a peer's mirror", func(t *testing.T) {
		d.start(t)
		d.crawlFleet(t) // the server answers list the servers a node knows
		took := holds(t, 30*time.Second, d, all, a, b)
		_, body := get(t, d.url()+"/api/v1/mirrors")
		var list struct {
			Mirrors []struct {
				Observer   string `json:"observer"`
				Size       uint64 `json:"size"`
				LastSource string `json:"lastSource"`
			} `json:"mirrors"`
		}
		if err := json.Unmarshal([]byte(body), &list); err != nil {
			t.Fatal(err)
		}
		via := ""
		for _, m := range list.Mirrors {
			if m.Observer == a.did() {
				via = m.LastSource
			}
		}
		if !strings.Contains(via, b.did()) || !strings.Contains(via, "mirror/"+a.did()) {
			t.Errorf("d read a's log from %q, want b's mirror of it:\n%s", via, body)
		}
		t.Logf("d, which never reaches a, held a's observations %v after its start, from %s", took.Round(time.Millisecond), via)
	})

	t.Run("SIGSTOP while the others crawl a change", func(t *testing.T) {
		c.signal(t, syscall.SIGSTOP)
		fl.add(0)
		fl.add(1)
		a.crawlFleet(t)
		b.crawlFleet(t)
		time.Sleep(3 * time.Second) // the heads' announcements are long gone
		c.signal(t, syscall.SIGCONT)
		took := holds(t, 10*time.Second, c, []string{fl.id(0), fl.id(1)}, a, b)
		t.Logf("c held a's and b's new observations %v after it resumed", took.Round(time.Millisecond))
	})

	t.Run("SIGKILL, the others crawl, restart", func(t *testing.T) {
		b.kill(t)
		fl.add(2)
		fl.add(3)
		a.crawlFleet(t)
		c.crawlFleet(t)
		b.start(t)
		took := holds(t, 10*time.Second, b, []string{fl.id(2), fl.id(3)}, a, c)
		t.Logf("b held a's and c's new observations %v after its restart", took.Round(time.Millisecond))
	})

	t.Run("partition and heal", func(t *testing.T) {
		if os.Geteuid() != 0 {
			t.Skip("cutting loopback traffic takes iptables, which needs root")
		}
		ipt, err := exec.LookPath("iptables")
		if err != nil {
			t.Skip("cutting loopback traffic takes iptables, which is not installed")
		}
		// Every libp2p connection has a listening port at one end: dropping the three
		// cuts every node off from every other.
		var rules [][]string
		for _, p := range procs {
			port := portOf(p.listen[0])
			rules = append(rules, []string{"INPUT", "-i", "lo", "-p", "tcp", "--dport", port, "-j", "DROP"},
				[]string{"INPUT", "-i", "lo", "-p", "tcp", "--sport", port, "-j", "DROP"})
		}
		heal := func() {
			for _, r := range rules {
				exec.Command(ipt, append([]string{"-D"}, r...)...).Run()
			}
		}
		t.Cleanup(heal)
		for _, r := range rules {
			if out, err := exec.Command(ipt, append([]string{"-I"}, r...)...).CombinedOutput(); err != nil {
				t.Skipf("iptables refused a rule (%v): %s", err, out)
			}
		}
		fl.add(4)
		a.crawlFleet(t)
		b.crawlFleet(t)
		c.crawlFleet(t)
		time.Sleep(2 * time.Second) // more than a mirror poll
		mine, _ := seen(t, a, fl.id(4))
		if theirs, err := seen(t, c, fl.id(4)); err != nil || theirs[a.did()] == mine[a.did()] {
			t.Fatalf("c holds a's new observation while cut off (%v): the partition did not cut", err)
		}
		heal()
		took := holds(t, 10*time.Second, c, []string{fl.id(4)}, a, b)
		holds(t, 10*time.Second, a, []string{fl.id(4)}, b, c)
		t.Logf("c held a's and b's new observations %v after the partition healed", took.Round(time.Millisecond))
	})
}
