package browser

import (
	"net/url"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestAuditFails: the audit reports low contrast, low-contrast amber and a
// control without a name, and TabThrough an undrawn focus, so the desk's
// passing audits mean something.
func TestAuditFails(t *testing.T) {
	b := Start(t)
	page := `<!DOCTYPE html><html lang="en"><head><title>x</title><style>
	  .faint { color: #aaaaaa; } .amber { color: #c98a1b; } #bare:focus-visible { outline: none; }
	  a:focus-visible { outline: 3px solid #1f5fbf; }
	</style></head><body>
	<p>Readable text.</p><p class="faint">Faint text.</p><p class="amber">Light amber.</p>
	<a href="#x">A link</a> <input id="bare" name="bare"> <label for="named">Named</label><input id="named">
	</body></html>`
	b.Do("opening the page", chromedp.Navigate("data:text/html,"+url.PathEscape(page)))
	a := b.AuditPage()
	for _, want := range []string{"contrast 2.32:1 of p.faint", "amber contrast 2.94:1 of p.amber", "no accessible name: input#bare"} {
		if !strings.Contains(strings.Join(a.Problems, "\n"), want) {
			t.Errorf("the audit misses %q: %q", want, a.Problems)
		}
	}
	if a.Body < 15 || a.AmberCount != 1 {
		t.Errorf("body %.2f:1, %d amber elements", a.Body, a.AmberCount)
	}
	stops := b.TabThrough(10)
	var drawn []bool
	for _, f := range stops {
		drawn = append(drawn, f.Visible)
	}
	if len(stops) != 3 || !drawn[0] || drawn[1] {
		t.Errorf("Tab stops %+v: want the link drawn, the bare input not", stops)
	}
}
