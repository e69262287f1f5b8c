package web_test

import (
	"fmt"
	"strings"
	"time"

	cdppage "github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// chartPixelsJS counts the pixels of a chart's canvas painted exactly in
// a theme colour (a CSS variable such as --chart-1, "#rrggbb"), read now.
const chartPixelsJS = `((fig, colourVar) => {
	const c = document.querySelector(fig + ' canvas');
	if (!c) return -1;
	const hex = getComputedStyle(document.documentElement).getPropertyValue(colourVar).trim();
	const [r, g, b] = [1, 3, 5].map((i) => parseInt(hex.slice(i, i + 2), 16));
	const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
	let n = 0;
	for (let i = 0; i < d.length; i += 4) if (d[i] === r && d[i + 1] === g && d[i + 2] === b && d[i + 3] === 255) n++;
	return n;
})`

// chartPixels is the count of fig's canvas pixels in colourVar.
func chartPixels(p *page, fig, colourVar string) int {
	p.t.Helper()
	return eval[int](p, chartPixelsJS+`(`+quote(fig)+`, `+quote(colourVar)+`)`)
}

// waitChartPixels waits until fig's canvas has at least min pixels of
// colourVar (charts redraw a moment after the data or the theme changes).
func waitChartPixels(p *page, fig, colourVar string, min int) {
	p.t.Helper()
	js := chartPixelsJS + `(` + quote(fig) + `, ` + quote(colourVar) + `) >= ` + fmt.Sprint(min)
	if _, err := chromedp.Run(p.ctx, chromedp.Poll[bool](js, chromedp.WithPollingTimeout(10*time.Second))); err != nil {
		p.t.Fatalf("%s never drew %d pixels of %s (has %d): %v", fig, min, colourVar, chartPixels(p, fig, colourVar), err)
	}
}

// checkUsage checks the usage charts and tables under prefix (dash or
// overview) show one model's requests: both charts are drawn on a canvas
// with data (the per-model bar in the theme's first colour), their
// text alternatives name the figures, and the tables list the model.
func checkUsage(p *page, prefix, model string, requests int) {
	p.t.Helper()
	p.waitText("#"+prefix+`-models tr[data-model="`+model+`"] .requests`, fmt.Sprint(requests))
	day := time.Now().UTC().Format(time.DateOnly)
	p.waitText("#"+prefix+`-days tr[data-day="`+day+`"] .requests`, fmt.Sprint(requests))
	for _, fig := range []string{"#" + prefix + "-chart-days", "#" + prefix + "-chart-models"} {
		if n := eval[int](p, `+document.querySelector(`+quote(fig)+`).dataset.points`); n < 1 {
			p.t.Errorf("%s has no data point", fig)
		}
		label := eval[string](p, `document.querySelector(`+quote(fig+" [role=img]")+`).getAttribute('aria-label')`)
		if label == "" || strings.Contains(label, "{") {
			p.t.Errorf("%s text alternative = %q", fig, label)
		}
	}
	if label := eval[string](p, `document.querySelector(`+quote("#"+prefix+"-chart-models [role=img]")+`).getAttribute('aria-label')`); !strings.Contains(label, model) {
		p.t.Errorf("the per-model chart's text alternative %q does not name %s", label, model)
	}
	// The bar of the one model is a filled rectangle in --chart-1.
	waitChartPixels(p, "#"+prefix+"-chart-models", "--chart-1", 200)
	// The per-day line draws the model's point in --chart-1 too.
	waitChartPixels(p, "#"+prefix+"-chart-days", "--chart-1", 10)
	// The metric switch redraws with requests. Drawing broke nothing of
	// the Content-Security-Policy (uPlot styles through the DOM, never a
	// style attribute): watchCSP recorded every violation since the load.
	p.choose("#"+prefix+"-metric", "requests")
	p.waitText("#"+prefix+"-chart-models figcaption", "Requests")
	waitChartPixels(p, "#"+prefix+"-chart-models", "--chart-1", 200)
	p.choose("#"+prefix+"-metric", "quota")
	p.waitText("#"+prefix+"-chart-models figcaption", "Cost")
	waitChartPixels(p, "#"+prefix+"-chart-models", "--chart-1", 200)
	if v := eval[[]string](p, `window.cspViolations || ['watchCSP was not called']`); len(v) > 0 {
		p.t.Errorf("CSP violations while drawing charts: %v", v)
	}
}

// watchCSP records every Content-Security-Policy violation of every
// document the tab loads from now on in window.cspViolations. It must run
// before the load: Chrome reports a repeated violation once per document.
func watchCSP(p *page) {
	p.t.Helper()
	_, err := chromedp.Call(p.ctx, cdppage.AddScriptToEvaluateOnNewDocument, cdppage.AddScriptToEvaluateOnNewDocumentParams{
		Source: `window.cspViolations = []; document.addEventListener('securitypolicyviolation',
			(e) => window.cspViolations.push(e.violatedDirective + ' ' + e.blockedURI + ' ' + e.sourceFile + ':' + e.lineNumber));`})
	if err != nil {
		p.t.Fatalf("watch CSP violations: %v", err)
	}
}
