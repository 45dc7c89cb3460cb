// Package browser starts headless Chromium for the end-to-end tests and
// drives it with chromedp: one browser per test, a fresh profile each
// time, nothing reaching beyond loopback, screenshots kept as test
// artefacts. A test that needs it calls Start; without a Chromium, or
// under -short, the test is skipped with the reason.
package browser

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// DefaultTimeout bounds each Run.
const DefaultTimeout = 30 * time.Second

// Browser is one headless Chromium with one tab.
type Browser struct {
	// Ctx is the tab's chromedp context; pass it to chromedp.Run for
	// anything Run does not cover.
	Ctx context.Context
	t   *testing.T
	n   int // screenshots taken, to number the files
}

// Executable is the Chromium the tests run: $HISTOR_CHROMIUM, or the first
// of chromium, chromium-browser and google-chrome on $PATH; "" when none.
func Executable() string {
	if p := os.Getenv("HISTOR_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// Start launches Chromium for t and closes it when t ends. Console output
// and uncaught exceptions of the page go to t.Log, so a failing page
// script shows in the test's output.
func Start(t *testing.T) *Browser {
	t.Helper()
	if testing.Short() {
		t.Skip("starts headless Chromium; skipped in -short")
	}
	exe := Executable()
	if exe == "" {
		t.Skip("no Chromium: install Debian's chromium or set HISTOR_CHROMIUM")
	}
	profile := t.TempDir()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(exe), chromedp.UserDataDir(profile),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck,
		// Nothing may leave the machine: no QUIC, no background fetches,
		// no component or sync traffic.
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.WindowSize(1280, 1000),
	}
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelTab := chromedp.NewContext(alloc)
	if err := chromedp.Do(ctx); err != nil {
		cancelTab()
		cancelAlloc()
		t.Fatalf("starting %s: %v", exe, err)
	}
	messages := chromedp.Console(ctx)
	logged := make(chan struct{})
	go func() {
		defer close(logged)
		for m, err := range messages {
			if err != nil {
				return
			}
			t.Logf("page console %s: %s", m.Type, m.Text)
		}
	}()
	// Registered after TempDir, so it runs first: Chromium has exited
	// before its profile is removed, and nothing logs after the test.
	t.Cleanup(func() {
		cancelTab()
		cancelAlloc()
		<-logged
	})
	return &Browser{Ctx: ctx, t: t}
}

// Do runs steps in the tab within DefaultTimeout, failing the test (with a
// screenshot) on an error; what names the step in the failure.
func (b *Browser) Do(what string, steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.Ctx, DefaultTimeout)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		b.Screenshot("failed-" + what)
		b.t.Fatalf("%s: %v", what, err)
	}
}

// Eval evaluates a JavaScript expression in b's page (awaiting a promise it
// gives) and decodes its value, failing the test on an error.
func Eval[T any](b *Browser, expr string) T {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.Ctx, DefaultTimeout)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr, chromedp.EvalAwaitPromise))
	if err != nil {
		b.t.Fatalf("evaluating %s: %v", expr, err)
	}
	return v
}

// Screenshot saves the whole page as a PNG in ArtifactDir and logs its
// path; name is part of the file name.
func (b *Browser) Screenshot(name string) string {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.Ctx, DefaultTimeout)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.t.Errorf("screenshot %s: %v", name, err)
		return ""
	}
	b.n++
	path := filepath.Join(ArtifactDir(b.t), fmt.Sprintf("%02d-%s.png", b.n, safeName(name)))
	if err := os.WriteFile(path, png, 0o644); err != nil {
		b.t.Errorf("saving screenshot: %v", err)
		return ""
	}
	b.t.Logf("screenshot: %s", path)
	return path
}

// ArtifactDir is where t's screenshots go: $HISTOR_ARTIFACTS/<test name>
// when that is set (kept), else t.ArtifactDir() (kept under go test
// -artifacts, removed after the test otherwise).
func ArtifactDir(t *testing.T) string {
	t.Helper()
	root := os.Getenv("HISTOR_ARTIFACTS")
	if root == "" {
		return t.ArtifactDir()
	}
	dir := filepath.Join(root, safeName(t.Name()))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatalf("making artefact directory: %v", err)
	}
	return dir
}

func safeName(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
			return r
		}
		return '_'
	}, s)
}
