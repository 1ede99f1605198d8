package bench

import (
	"context"
	"fmt"
	"slices"
)

// modeTally gathers one mode's memory and CPU figures over the runs an
// interleaved suite gave it.
type modeTally struct {
	reserved    []int64
	queued      int64
	otherTicks  float64 // CPU seconds other processes used during its runs
	elapsedSecs float64
}

// runInterleaved is RunSkipping with Interleave set: per query, a warm-up
// in every mode, then its timed runs round-robin over the modes that
// warmed up, each round starting one mode further on. The rotation keeps
// any effect of a run on the next one (the collector finishing the last
// run's garbage, caches) from always landing on the same mode.
func (s *Suite) runInterleaved(ctx context.Context) ([]Run, []Memory, []Skip, error) {
	for _, mode := range s.Modes {
		if _, err := s.sessionFor(mode); err != nil {
			return nil, nil, nil, err
		}
	}
	run := s.runner()
	tallies := make([]modeTally, len(s.Modes))
	var runs []Run
	var skipped []Skip
	for _, q := range s.Queries {
		var live []int
		for i, mode := range s.Modes {
			sess, err := s.sessionFor(mode)
			if err != nil {
				return nil, nil, nil, err
			}
			skip, err := s.warmUpOrSkip(ctx, sess, q, mode)
			if err != nil {
				return nil, nil, nil, err
			}
			if skip != nil {
				skipped = append(skipped, *skip)
				continue
			}
			live = append(live, i)
		}
		totals := make([][]float64, len(s.Modes))
		for r := 1; r <= s.Runs; r++ {
			for k := range live {
				i := live[(k+r-1)%len(live)]
				sess, err := s.sessionFor(s.Modes[i])
				if err != nil {
					return nil, nil, nil, err
				}
				t := &tallies[i]
				if s.ResetReservedPeaks != nil {
					s.ResetReservedPeaks()
				}
				if s.ResetQueuePeak != nil {
					s.ResetQueuePeak()
				}
				before, cpuErr := SampleCPU()
				use0 := ProcessUsage()
				m, err := run(ctx, sess, q.Text)
				use := ProcessUsage().Sub(use0)
				if err != nil {
					return nil, nil, nil, fmt.Errorf("benchmark: %s (%s, run %d): %w", Label(q.Set, q.N), s.Modes[i], r, err)
				}
				if after, err := SampleCPU(); err == nil && cpuErr == nil {
					secs := after.At.Sub(before.At).Seconds()
					t.otherTicks += before.OtherCPUs(after) * secs
					t.elapsedSecs += secs
				}
				if s.ReservedPeaks != nil && s.Modes[i] != ModeInProcess {
					for e, v := range s.ReservedPeaks() {
						if e >= len(t.reserved) {
							t.reserved = append(t.reserved, 0)
						}
						t.reserved[e] = max(t.reserved[e], v)
					}
				}
				if s.QueuePeak != nil {
					t.queued = max(t.queued, s.QueuePeak())
				}
				runs = append(runs, Run{Set: q.Set, Query: q.N, Mode: s.Modes[i], Run: r, TTFRMs: ms(m.TTFR), TotalMs: ms(m.Total), Rows: m.Rows, CPUMs: ms(use.CPU), PageFaults: use.PageFaults, GCCycles: use.GCCycles})
				totals[i] = append(totals[i], ms(m.Total))
			}
		}
		if s.Progress != nil {
			for _, i := range live {
				fmt.Fprintf(s.Progress, "%-3s %-10s median %8.1f ms\n", Label(q.Set, q.N), s.Modes[i], Median(totals[i]))
			}
		}
	}
	rss, rssErr := PeakRSS()
	mem := make([]Memory, len(s.Modes))
	for i, mode := range s.Modes {
		t := tallies[i]
		mem[i] = Memory{Mode: mode, PeakQueuedBytes: t.queued, PeakReservedBytes: slices.Clone(t.reserved)}
		if rssErr == nil {
			mem[i].PeakRSSBytes = rss
		}
		if t.elapsedSecs > 0 {
			mem[i].OtherCPUs = t.otherTicks / t.elapsedSecs
		}
	}
	return runs, mem, skipped, nil
}
