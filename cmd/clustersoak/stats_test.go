package main

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

func TestLagsBetween(t *testing.T) {
	t0 := time.Unix(1000, 0)
	samples := []lagSample{
		{acked: t0, lag: 30 * time.Millisecond, reader: 1},
		{acked: t0.Add(time.Second), lag: 10 * time.Millisecond, reader: 2},
		{acked: t0.Add(2 * time.Second), lag: 20 * time.Millisecond, reader: 2},
		{acked: t0.Add(3 * time.Second), lag: 40 * time.Millisecond, reader: 3},
	}
	all := func(int) bool { return true }
	if got, want := lagsBetween(samples, time.Time{}, time.Time{}, all), []time.Duration{10e6, 20e6, 30e6, 40e6}; !slices.Equal(got, want) {
		t.Errorf("all: %v, want %v", got, want)
	}
	if got, want := lagsBetween(samples, t0.Add(time.Second), t0.Add(3*time.Second), all), []time.Duration{10e6, 20e6}; !slices.Equal(got, want) {
		t.Errorf("[1s, 3s): %v, want %v", got, want)
	}
	two := func(n int) bool { return n == 2 }
	if got, want := lagsBetween(samples, time.Time{}, t0.Add(2*time.Second), two), []time.Duration{10e6}; !slices.Equal(got, want) {
		t.Errorf("node 2 before 2s: %v, want %v", got, want)
	}
}

func TestSeqOf(t *testing.T) {
	for in, want := range map[string]int{"probe-12": 12, "probe-0": 0, "": -1, "s0a1b2c3d": -1, "probe-x": -1, "12": -1} {
		if got := seqOf(in); got != want {
			t.Errorf("seqOf(%q) = %d, want %d", in, got, want)
		}
	}
	if seqOf(markerText(42)) != 42 {
		t.Error("markerText and seqOf disagree")
	}
}

// Every operation is drawn, in about its share.
func TestPickFollowsWeights(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	total := 0
	for _, o := range operations {
		total += o.weight
	}
	counts := map[string]int{}
	const draws = 100000
	for range draws {
		counts[pick(r).name]++
	}
	for _, o := range operations {
		want := float64(draws) * float64(o.weight) / float64(total)
		if got := float64(counts[o.name]); got < want*0.8 || got > want*1.2 {
			t.Errorf("%s drawn %g times, want about %g", o.name, got, want)
		}
	}
}
