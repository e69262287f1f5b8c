package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// roundTripsMetric is the gateway's counter of statements sent to its
// database (docs/operations.md).
const roundTripsMetric = "modelgate_db_round_trips_total"

// scrapeRoundTrips reads roundTripsMetric from the gateway's /metrics.
func scrapeRoundTrips(ctx context.Context, base, token string) (int64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/metrics", nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := apiClient.Do(req)
	if err != nil {
		return 0, fmt.Errorf("scrape /metrics: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return 0, fmt.Errorf("scrape /metrics: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("scrape /metrics: HTTP %d", resp.StatusCode)
	}
	v, err := metricValue(body, roundTripsMetric)
	if err != nil {
		return 0, err
	}
	return int64(v), nil
}

// metricValue finds the sample of an unlabelled series in a Prometheus
// text exposition: the line "name value" or "name value timestamp".
// Comments (# HELP, # TYPE) and series whose name only starts with name
// are skipped.
func metricValue(body []byte, name string) (float64, error) {
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		rest, ok := strings.CutPrefix(line, name)
		if !ok || line[0] == '#' || rest == "" || (rest[0] != ' ' && rest[0] != '\t') {
			continue
		}
		fields := strings.Fields(rest)
		v, err := strconv.ParseFloat(fields[0], 64)
		if err != nil {
			return 0, fmt.Errorf("metric %s: value %q: %w", name, fields[0], err)
		}
		return v, nil
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("metric %s not in the scrape", name)
}
