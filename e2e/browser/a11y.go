package browser

import (
	"context"
	"fmt"

	"github.com/chromedp/chromedp"
)

// MinContrast is WCAG 2's AA contrast for body-size text.
const MinContrast = 4.5

// Audit is what the browser measured of one page's accessibility.
type Audit struct {
	// Body is the contrast of the body's text on its background; Amber
	// the lowest contrast of amber text (.amber, .changed, .diff-add,
	// .diff-del) on what is behind it, 0 when the page shows none.
	Body, Amber float64
	// AmberCount is how many amber elements were measured.
	AmberCount int
	// Texts is how many elements with their own text were measured.
	Texts int
	// Problems are the failures: text under MinContrast, a form control
	// without an accessible name.
	Problems []string
}

// auditScript measures, with the computed styles the browser applies,
// the contrast of every visible element that holds text of its own
// against the first opaque background behind it (up its ancestors), and
// the accessible name of every form control. Text drawn in SVG is left
// out: its colour is a fill over shapes, and the Log page gives a table of
// the same facts.
const auditScript = `(() => {
  const rgb = (c) => {
    const m = /rgba?\(([^)]*)\)/.exec(c);
    if (!m) return null;
    const p = m[1].split(/[\s,\/]+/).filter(Boolean).map(Number);
    return {c: p.slice(0, 3), a: p.length > 3 ? p[3] : 1};
  };
  const lin = (v) => { v /= 255; return v <= 0.04045 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); };
  const lum = (c) => 0.2126 * lin(c[0]) + 0.7152 * lin(c[1]) + 0.0722 * lin(c[2]);
  const ratio = (a, b) => { const x = lum(a), y = lum(b); return (Math.max(x, y) + 0.05) / (Math.min(x, y) + 0.05); };
  const behind = (el) => {
    for (let e = el; e; e = e.parentElement) {
      const b = rgb(getComputedStyle(e).backgroundColor);
      if (b && b.a > 0) return b.c;
    }
    return [255, 255, 255];
  };
  const name = (el) => (el.id ? "#" + el.id : "") + (el.className && typeof el.className === "string" ? "." + el.className.split(" ").join(".") : "");
  const where = (el) => el.tagName.toLowerCase() + name(el) + " “" + (el.textContent || "").trim().slice(0, 40) + "”";
  const contrastOf = (el) => ratio(rgb(getComputedStyle(el).color).c, behind(el));
  const out = {Body: contrastOf(document.body), Amber: 0, AmberCount: 0, Texts: 0, Problems: []};
  for (const el of document.body.querySelectorAll("*")) {
    if (el.closest("svg, script, style, noscript")) continue;
    const own = [...el.childNodes].some((n) => n.nodeType === 3 && n.textContent.trim() !== "");
    const cs = getComputedStyle(el);
    if (!own || cs.visibility === "hidden" || el.getClientRects().length === 0) continue;
    const r = contrastOf(el);
    out.Texts++;
    if (r < ` + "%v" + `) out.Problems.push("contrast " + r.toFixed(2) + ":1 of " + where(el));
  }
  for (const el of document.body.querySelectorAll(".amber, .changed, .diff-add, .diff-del")) {
    const r = contrastOf(el);
    out.Amber = out.AmberCount === 0 ? r : Math.min(out.Amber, r);
    out.AmberCount++;
    if (r < ` + "%v" + `) out.Problems.push("amber contrast " + r.toFixed(2) + ":1 of " + where(el));
  }
  for (const el of document.querySelectorAll("input, select, textarea, button")) {
    if (el.type === "hidden") continue;
    const byLabel = [...(el.labels || [])].map((l) => l.textContent.trim()).join(" ");
    const byAria = el.getAttribute("aria-label") || (el.getAttribute("aria-labelledby") || "").split(" ").map((id) => (document.getElementById(id) || {}).textContent || "").join(" ");
    const byText = el.tagName === "BUTTON" ? el.textContent : "";
    if ((byLabel + byAria + byText).trim() === "") out.Problems.push("no accessible name: " + where(el));
  }
  return out;
})()`

// AuditPage measures the page open in b.
func (b *Browser) AuditPage() Audit {
	b.t.Helper()
	return Eval[Audit](b, fmt.Sprintf(auditScript, MinContrast, MinContrast))
}

// Focus is what had the keyboard focus after one Tab.
type Focus struct {
	// What names the element: its tag, id, classes and text.
	What string
	// Visible reports the focus drawn: :focus-visible matches and the
	// element has an outline or a box shadow.
	Visible bool
	// Style is the outline and box shadow, for the log.
	Style string
}

// focusScript describes document.activeElement after a Tab.
const focusScript = `(() => {
  const e = document.activeElement;
  if (!e || e === document.body) return null;
  const cs = getComputedStyle(e);
  const outline = cs.outlineStyle !== "none" && parseFloat(cs.outlineWidth) > 0;
  const shadow = cs.boxShadow !== "none" && cs.boxShadow !== "";
  const cls = typeof e.className === "string" && e.className ? "." + e.className.split(" ").join(".") : "";
  return {
    What: e.tagName.toLowerCase() + (e.id ? "#" + e.id : "") + cls + " “" + (e.textContent || e.value || "").trim().slice(0, 30) + "”",
    Visible: e.matches(":focus-visible") && (outline || shadow),
    Style: cs.outlineStyle + " " + cs.outlineWidth + " " + cs.outlineColor + (shadow ? " shadow " + cs.boxShadow : ""),
  };
})()`

// TabThrough presses Tab up to max times from the top of the page open in
// b and returns what took the focus each time, ending early when the focus
// leaves the page (back to the body or the browser's own chrome).
func (b *Browser) TabThrough(max int) []Focus {
	b.t.Helper()
	var out []Focus
	ctx, cancel := context.WithTimeout(b.Ctx, DefaultTimeout)
	defer cancel()
	// A focus point before everything, so the first Tab reaches the first
	// focusable element whatever was clicked or focused before.
	const start = `(() => { const s = document.createElement("span"); s.id = "tab-start"; s.tabIndex = -1; document.body.prepend(s); s.focus(); return true; })()`
	const end = `(document.getElementById("tab-start")?.remove(), true)`
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](start)); err != nil {
		b.t.Fatalf("resetting the focus: %v", err)
	}
	defer chromedp.Run(ctx, chromedp.Evaluate[bool](end))
	for range max {
		if err := chromedp.Do(ctx, chromedp.KeyEvent("\t")); err != nil {
			b.t.Fatalf("pressing Tab: %v", err)
		}
		f, err := chromedp.Run(ctx, chromedp.Evaluate[*Focus](focusScript))
		if err != nil {
			b.t.Fatalf("reading the focus: %v", err)
		}
		if f == nil || (len(out) > 0 && f.What == out[0].What) {
			break
		}
		out = append(out, *f)
	}
	return out
}
