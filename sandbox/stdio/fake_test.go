package stdio

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// fakeEnv names the fake server a re-executed test binary plays.
const fakeEnv = "HISTOR_STDIO_FAKE"

func TestMain(m *testing.M) {
	if name := os.Getenv(fakeEnv); name != "" {
		serve, ok := fakes[name]
		if !ok {
			fmt.Fprintf(os.Stderr, "no fake server %q\n", name)
			os.Exit(3)
		}
		serve(newFake(os.Stdin, os.Stdout))
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// fake is a scripted MCP server on a pair of streams. Its methods end the
// server (by panicking errFakeDone, recovered in play) when the stream does.
type fake struct {
	in  *bufio.Reader
	out io.Writer
}

type fakeDone struct{}

func newFake(in io.Reader, out io.Writer) *fake {
	return &fake{in: bufio.NewReaderSize(in, 1<<20), out: out}
}

// play runs a fake server to its end, or until its streams close.
func play(serve func(*fake), f *fake) {
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(fakeDone); !ok {
				panic(r)
			}
		}
	}()
	serve(f)
}

// next returns the next message the client sent.
func (f *fake) next() map[string]any {
	line, err := f.in.ReadBytes('\n')
	if err != nil {
		panic(fakeDone{})
	}
	var m map[string]any
	if err := json.Unmarshal(line, &m); err != nil {
		f.raw(fmt.Sprintf("fake: bad message %q: %v", line, err))
		panic(fakeDone{})
	}
	return m
}

// expect returns the next request, skipping notifications.
func (f *fake) request() map[string]any {
	for {
		if m := f.next(); m["id"] != nil {
			return m
		}
	}
}

func (f *fake) raw(s string) {
	if _, err := io.WriteString(f.out, s+"\n"); err != nil {
		panic(fakeDone{})
	}
}

func (f *fake) send(m map[string]any) {
	m["jsonrpc"] = "2.0"
	b, err := json.Marshal(m)
	if err != nil {
		panic(err)
	}
	f.raw(string(b))
}

func (f *fake) reply(req map[string]any, result any) {
	f.send(map[string]any{"id": req["id"], "result": result})
}

func (f *fake) initialize() {
	req := f.request()
	f.reply(req, map[string]any{
		"protocolVersion": "2025-06-18", "capabilities": map[string]any{"tools": map[string]any{}},
		"serverInfo": map[string]any{"name": "fake", "version": "0.0.1"},
	})
}

func tool(name string, schema map[string]any) map[string]any {
	if schema == nil {
		schema = map[string]any{"type": "object"}
	}
	return map[string]any{"name": name, "description": "fake tool " + name, "inputSchema": schema}
}

// listOnce answers one tools/list with tools and the cursor next.
func (f *fake) listOnce(tools []any, next string) {
	req := f.request()
	r := map[string]any{"tools": tools}
	if next != "" {
		r["nextCursor"] = next
	}
	f.reply(req, r)
}

// serveCalls answers every tools/call by echoing its arguments as text,
// except the tools in hang, which are never answered.
func (f *fake) serveCalls(hang ...string) {
	for {
		req := f.request()
		params, _ := req["params"].(map[string]any)
		name, _ := params["name"].(string)
		if contains(hang, name) {
			continue
		}
		args, _ := json.Marshal(params["arguments"])
		f.reply(req, map[string]any{"content": []any{map[string]any{"type": "text", "text": name + " got " + string(args)}}})
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// fakes are the servers the tests talk to, in-process (over io.Pipe) or as
// a re-executed test binary.
var fakes = map[string]func(*fake){
	"silent": func(f *fake) {
		for {
			f.next()
		}
	},
	// deaf never reads its stdin and floods the client with requests, so
	// the client's declines fill the pipe and its writes block.
	"deaf": func(f *fake) {
		for i := 0; i < 100000; i++ {
			f.send(map[string]any{"id": i, "method": "roots/list"})
		}
		time.Sleep(time.Hour) // still running, still not reading (only ever run as a process)
	},
	"endless": func(f *fake) {
		line := strings.Repeat("log output that never ends ", 40)
		for {
			f.raw(line)
		}
	},
	"hugeline": func(f *fake) {
		f.next()
		chunk := strings.Repeat("x", 1<<20)
		for i := 0; i < 100; i++ {
			if _, err := io.WriteString(f.out, chunk); err != nil {
				return
			}
		}
		f.raw("")
	},
	"garbage": func(f *fake) {
		junk := func() {
			f.raw("Server starting on stdio...")
			f.raw("\x00\x01\xff\xfe binary \xc3\x28")
			f.raw("{not json at all")
			f.raw("[1,2,3]")
			f.raw("42")
			f.raw(`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"hi"}}`)
			f.raw(`{"jsonrpc":"2.0","id":999,"result":{"tools":[]}}`)
			f.raw(`{"jsonrpc":"2.0","id":"1","result":{}}`)
		}
		junk()
		f.initialize()
		junk()
		f.listOnce([]any{tool("echo", nil)}, "")
		junk()
		f.serveCalls()
	},
	"manytools": func(f *fake) {
		f.initialize()
		tools := make([]any, 5000)
		for i := range tools {
			tools[i] = tool(fmt.Sprintf("tool-%04d", i), nil)
		}
		f.listOnce(tools, "")
	},
	"manypages": func(f *fake) {
		f.initialize()
		for i := 0; i < 100; i++ {
			f.listOnce([]any{tool(fmt.Sprintf("tool-%03d", i), nil)}, fmt.Sprintf("page-%d", i+1))
		}
	},
	"asks": func(f *fake) {
		req := f.request()
		ok := f.ask("roots/list", func(m map[string]any) bool {
			r, _ := m["result"].(map[string]any)
			roots, isList := r["roots"].([]any)
			return isList && len(roots) == 0 && m["error"] == nil
		})
		ok = f.ask("sampling/createMessage", func(m map[string]any) bool {
			e, _ := m["error"].(map[string]any)
			return e["code"] == float64(-32601) && m["result"] == nil
		}) && ok
		ok = f.ask("elicitation/create", func(m map[string]any) bool { return m["error"] != nil }) && ok
		f.reply(req, map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{}})
		name := "declined-wrongly"
		if ok {
			name = "declined-rightly"
		}
		f.listOnce([]any{tool(name, nil)}, "")
		f.serveCalls()
	},
	"hang": func(f *fake) {
		f.initialize()
		f.listOnce([]any{tool("slow", nil), tool("fast", nil)}, "")
		f.serveCalls("slow")
	},
	"exits": func(f *fake) {
		f.initialize()
		f.listOnce([]any{tool("first", nil)}, "page-2")
		f.request()
	},
	"canaries": func(f *fake) {
		f.initialize()
		f.listOnce(canaryTools(), "")
		f.serveCalls()
	},
}

// ask sends the client a request and checks its answer.
func (f *fake) ask(method string, check func(map[string]any) bool) bool {
	id := "srv-" + method
	f.send(map[string]any{"id": id, "method": method, "params": map[string]any{}})
	for {
		m := f.next()
		if m["id"] == id {
			return check(m)
		}
	}
}

func canaryTools() []any {
	obj := func(props map[string]any, required ...any) map[string]any {
		s := map[string]any{"type": "object", "properties": props}
		if required != nil {
			s["required"] = required
		}
		return s
	}
	str := map[string]any{"type": "string"}
	return []any{
		tool("send_mail", obj(map[string]any{"to": str, "subject": str, "body": str}, "to", "subject")),
		tool("fetch", obj(map[string]any{"url": map[string]any{"type": "string", "format": "uri"}})),
		tool("read", obj(map[string]any{"path": str, "limit": map[string]any{"type": "integer", "minimum": 3}})),
		tool("ref", obj(map[string]any{"x": map[string]any{"$ref": "#/$defs/x"}})),
		tool("forward", obj(map[string]any{"target": map[string]any{"type": "string", "enum": []any{"ops@example.com"}}})),
	}
}

// process runs a fake server as a child process, killed when the test ends.
type process struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout io.ReadCloser
}

func startFake(t testing.TB, name string) *process {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), fakeEnv+"="+name)
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	return startProcess(t, cmd)
}

func startProcess(t testing.TB, cmd *exec.Cmd) *process {
	t.Helper()
	p := &process{cmd: cmd}
	var err error
	if p.stdin, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if p.stdout, err = cmd.StdoutPipe(); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", cmd.Path, err)
	}
	t.Cleanup(p.kill)
	return p
}

func (p *process) kill() {
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	_ = p.cmd.Wait()
}

func (p *process) run(c Canary) Run {
	return Run{Stdin: p.stdin, Stdout: p.stdout, Started: time.Now(), Canary: c}
}

var testCanary = Canary{Run: "r1", DecoyPath: "/home/histor/notes/canary.txt"}
