package apptest

import (
	"net/http"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// MetricsToken is a METRICS_TOKEN for tests: start with
// New(t, "METRICS_TOKEN", MetricsToken) to serve /metrics.
const MetricsToken = "test-metrics-token-0123456789"

// Metrics is one scrape of /metrics, parsed by the Prometheus text parser.
type Metrics map[string]*dto.MetricFamily

// Scrape reads GET /metrics at base (the gateway's URL, or a
// METRICS_LISTEN address as http://host:port) with MetricsToken.
func Scrape(t testing.TB, base string) Metrics {
	t.Helper()
	req, err := http.NewRequest("GET", base+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+MetricsToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: status %d", resp.StatusCode)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parse /metrics: %v", err)
	}
	return families
}

// Scrape reads the gateway's /metrics (see the function Scrape).
func (e *Env) Scrape() Metrics {
	e.t.Helper()
	return Scrape(e.t, e.Server.URL)
}

// Value is the value of family name's sample whose labels include the
// pairs given (name, value, name, value…): a counter's or gauge's value, a
// histogram's sample count. ok is false when no sample matches; several
// matching samples are summed.
func (m Metrics) Value(name string, labels ...string) (v float64, ok bool) {
	f := m[name]
	if f == nil {
		return 0, false
	}
	for _, s := range f.GetMetric() {
		if !hasLabels(s, labels) {
			continue
		}
		ok = true
		switch {
		case s.Counter != nil:
			v += s.GetCounter().GetValue()
		case s.Gauge != nil:
			v += s.GetGauge().GetValue()
		case s.Histogram != nil:
			v += float64(s.GetHistogram().GetSampleCount())
		case s.Untyped != nil:
			v += s.GetUntyped().GetValue()
		}
	}
	return v, ok
}

// LabelValues lists the values label takes in family name.
func (m Metrics) LabelValues(name, label string) []string {
	var out []string
	for _, s := range m[name].GetMetric() {
		for _, l := range s.GetLabel() {
			if l.GetName() == label {
				out = append(out, l.GetValue())
			}
		}
	}
	return out
}

func hasLabels(s *dto.Metric, pairs []string) bool {
	for i := 0; i+1 < len(pairs); i += 2 {
		found := false
		for _, l := range s.GetLabel() {
			if l.GetName() == pairs[i] && l.GetValue() == pairs[i+1] {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}
