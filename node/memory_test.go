package node

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/histor-observer/histor/internal/raceflag"
	"github.com/histor-observer/histor/log/cmalloc"
)

// maxServingRSS bounds the peak resident memory of a node serving a
// million-leaf log, less the pages mapped from its executable (RssFile):
// those grow with what is linked into the binary (the sandbox, the queue,
// the browser harness in this test binary), not with what the node holds.
const maxServingRSS = 128 << 20

// childDirEnv names the data directory TestServeChild serves; it is set
// only in the child process TestServingMemory1M starts.
const childDirEnv = "HISTOR_NODE_TEST_SERVE_DIR"

// TestServingMemory1M starts a node in a separate process over a
// million-leaf log, so that nothing built by the test is counted, fires
// proofs, tiles and entry reads at it, and reads its resident memory (VmRSS
// and the high-water mark VmHWM) from /proc.
func TestServingMemory1M(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a million-leaf log (about a minute); run without -short")
	}
	if _, err := os.Stat("/proc/self/status"); err != nil {
		t.Skip("needs /proc to read resident memory")
	}
	if raceflag.Enabled {
		t.Skip("bounds resident memory, which the race detector's shadow memory inflates")
	}
	dir := bigDataDir(t)
	cmd := exec.Command(os.Args[0], "-test.run=^TestServeChild$", "-test.v")
	cmd.Env = append(os.Environ(), childDirEnv+"="+dir)
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer stdin.Close() // the child stops serving at EOF
	base := readChildAddr(t, stdout)
	go io.Copy(io.Discard, stdout)
	loadChild(t, base, 100_000)
	rss, hwm, file := procMemory(t, cmd.Process.Pid)
	t.Logf("serving %d leaves after %d requests: VmRSS %.1f MiB, VmHWM %.1f MiB, of which %.1f MiB mapped from the binary (RssFile)",
		bigLeaves, 100_000+2000, mib(rss), mib(hwm), mib(file))
	if hwm-file >= maxServingRSS {
		t.Fatalf("peak resident memory %.1f MiB beyond the binary's pages, bound %.0f MiB", mib(hwm-file), mib(maxServingRSS))
	}
}

// TestServeChild is the serving process of TestServingMemory1M.
func TestServeChild(t *testing.T) {
	dir := os.Getenv(childDirEnv)
	if dir == "" {
		t.Skip("runs only as the child process of TestServingMemory1M")
	}
	// The binary tunes the C allocator for the whole process; so does this
	// stand-in for it.
	cmalloc.Tune(cmalloc.DefaultMmapThreshold, cmalloc.DefaultMaxMmaps)
	nd, err := New(Config{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if err := nd.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("ADDR %s\n", ln.Addr())
	ctx, cancel := context.WithCancel(context.Background())
	go func() { io.Copy(io.Discard, os.Stdin); cancel() }()
	if err := nd.Serve(ctx, ln); err != nil {
		t.Error(err)
	}
	if err := nd.Close(); err != nil {
		t.Error(err)
	}
}

func readChildAddr(t *testing.T, r io.Reader) string {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		if addr, ok := strings.CutPrefix(sc.Text(), "ADDR "); ok {
			return "http://" + addr
		}
	}
	t.Fatalf("child exited without serving: %v", sc.Err())
	return ""
}

// loadChild sends n random inclusion-proof requests from four workers, then
// reads 1000 entry bundles and 1000 pages of entries.
func loadChild(t *testing.T, base string, n int) {
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 8}}
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(w), 7))
			for range n / 4 {
				if err := fetchOK(client, base+proofPath(r)); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		t.Fatal(err)
	}
	for i := range 1000 {
		idx := uint64(i) * (bigLeaves / 256 / 1000)
		if err := fetchOK(client, base+"/log/tile/entries/"+c2spIndex(int64(idx))); err != nil {
			t.Fatal(err)
		}
		if err := fetchOK(client, fmt.Sprintf("%s/api/v1/log/entries?start=%d&end=%d", base, idx*256, idx*256+1000)); err != nil {
			t.Fatal(err)
		}
	}
}

func fetchOK(c *http.Client, url string) error {
	resp, err := c.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return nil
}

// procMemory reads VmRSS and VmHWM of a process, in bytes.
func procMemory(t *testing.T, pid int) (rss, hwm, file int64) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		name, val, _ := strings.Cut(line, ":")
		fields := strings.Fields(val)
		if len(fields) != 2 || fields[1] != "kB" {
			continue
		}
		kb, _ := strconv.ParseInt(fields[0], 10, 64)
		switch name {
		case "VmRSS":
			rss = kb << 10
		case "VmHWM":
			hwm = kb << 10
		case "RssFile":
			file = kb << 10
		}
	}
	if rss == 0 || hwm == 0 {
		t.Fatalf("no VmRSS/VmHWM in /proc/%d/status", pid)
	}
	return rss, hwm, file
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }
