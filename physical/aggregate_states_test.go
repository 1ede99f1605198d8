package physical

import (
	"testing"

	"sluice/physical/mempool"
)

// TestGrowStatesZeroesNewGroups: per-group states grown into a recycled
// buffer start at zero whatever the buffer held, keep the groups they had,
// and a released accumulator's slices can be grown into again.
func TestGrowStatesZeroesNewGroups(t *testing.T) {
	for round := range 3 {
		// Leave dirty buffers of the sizes the states will take in the pool.
		for _, n := range []int{1024, 2048, 4096, 8192} {
			junk := mempool.GrowSlice([]int64(nil), n)[:n]
			for i := range junk {
				junk[i] = -1
			}
			flags := mempool.GrowSlice([]bool(nil), n)[:n]
			for i := range flags {
				flags[i] = true
			}
			mempool.FreeSlice(junk[:cap(junk)])
			mempool.FreeSlice(flags[:cap(flags)])
		}
		s := &aggSumInt{}
		c := &aggCount{}
		for n := 1; n <= 5000; n += 700 {
			old := len(s.sums)
			s.resize(n)
			c.resize(n)
			for g := old; g < n; g++ {
				if s.sums[g] != 0 || s.seen[g] || c.counts[g] != 0 {
					t.Fatalf("round %d: new group %d of %d starts at sum %d seen %v count %d", round, g, n, s.sums[g], s.seen[g], c.counts[g])
				}
			}
			for g := old; g < n; g++ {
				s.sums[g], s.seen[g], c.counts[g] = int64(g), true, int64(2*g)
			}
			for g := range n {
				if s.sums[g] != int64(g) || !s.seen[g] || c.counts[g] != int64(2*g) {
					t.Fatalf("round %d: group %d lost its state after growing to %d", round, g, n)
				}
			}
		}
		s.release()
		c.release()
		if s.sums != nil || s.seen != nil || c.counts != nil {
			t.Fatal("released states still held")
		}
		s.release() // twice is harmless
	}
}
