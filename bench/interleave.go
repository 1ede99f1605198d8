package bench

import (
	"context"
	"fmt"
	"slices"

	"sluice/session"
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
// warmed up.
func (s *Suite) runInterleaved(ctx context.Context) ([]Run, []Memory, []Skip, error) {
	sessions := make([]*session.Session, len(s.Modes))
	for i, mode := range s.Modes {
		sessions[i] = s.Session
		if mode == ModeInProcess {
			if s.InProcess == nil {
				return nil, nil, nil, fmt.Errorf("benchmark: mode %s needs an in-process session", mode)
			}
			sessions[i] = s.InProcess
		}
	}
	use := func(i int) (*session.Session, error) {
		if s.Modes[i] == ModeInProcess {
			return sessions[i], nil
		}
		if err := setMode(sessions[i], s.Modes[i]); err != nil {
			return nil, fmt.Errorf("benchmark: mode %q: %w", s.Modes[i], err)
		}
		return sessions[i], nil
	}
	run := s.runner()
	tallies := make([]modeTally, len(s.Modes))
	var runs []Run
	var skipped []Skip
	for _, q := range s.Queries {
		var live []int
		for i, mode := range s.Modes {
			sess, err := use(i)
			if err != nil {
				return nil, nil, nil, err
			}
			if err := s.warmUp(ctx, sess, q, mode); err != nil {
				if s.SkipFailing && ctx.Err() == nil {
					skipped = append(skipped, Skip{Set: q.Set, Query: q.N, Mode: mode, Error: err.Error()})
					if s.Progress != nil {
						fmt.Fprintf(s.Progress, "%-3s %-10s skipped: %v\n", Label(q.Set, q.N), mode, err)
					}
					continue
				}
				return nil, nil, nil, fmt.Errorf("benchmark: %s (%s, warm-up): %w", Label(q.Set, q.N), mode, err)
			}
			live = append(live, i)
		}
		totals := make([][]float64, len(s.Modes))
		for r := 1; r <= s.Runs; r++ {
			for _, i := range live {
				sess, err := use(i)
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
				m, err := run(ctx, sess, q.Text)
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
				runs = append(runs, Run{Set: q.Set, Query: q.N, Mode: s.Modes[i], Run: r, TTFRMs: ms(m.TTFR), TotalMs: ms(m.Total), Rows: m.Rows})
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
