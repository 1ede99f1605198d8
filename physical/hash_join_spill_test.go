package physical

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"sluice/physical/expr"
	"sluice/physical/mempool"
	"sluice/plan"
)

// jaSpillRows generates n rows (k1, k2, v) over about keys distinct k1
// values, with duplicates and NULLs: enough keys that every spill bucket
// gets a share.
func jaSpillRows(n, keys, seed int) [][]any {
	r := rand.New(rand.NewPCG(uint64(seed), 7))
	rows := make([][]any, n)
	for i := range rows {
		var k1, k2, v any = r.IntN(keys), fmt.Sprint("s", r.IntN(3)), r.IntN(4)
		if r.IntN(20) == 0 {
			k1 = nil
		}
		if r.IntN(25) == 0 {
			k2 = nil
		}
		if r.IntN(10) == 0 {
			v = nil
		}
		rows[i] = []any{k1, k2, v}
	}
	return rows
}

// spillCheck runs a spilling test body and checks what must hold after it
// whatever its outcome: the pool holds nothing, no spill file is in dir,
// no file descriptor stayed open, and (want) the operator spilled.
func spillCheck(t *testing.T, tc *TaskContext, wantSpill bool, body func()) {
	t.Helper()
	fds := openFDs(t)
	files, _ := SpillStats()
	body()
	if u := tc.Memory.Used(); u != 0 {
		t.Errorf("memory pool still holds %d bytes", u)
	}
	checkNoSpillFiles(t, tc.SpillDir)
	if n := openFDs(t); n > fds {
		t.Errorf("%d file descriptors open, %d before: spill files left open", n, fds)
	}
	if now, _ := SpillStats(); wantSpill && now == files {
		t.Errorf("no spill file was created: the test did not spill")
	}
}

// TestHashJoinCollectLeftSpills: a collect-left join whose shared build
// side is over a (random) memory limit spills it once to bucket files,
// each probe partition splits its own rows, and every join type, the
// null-aware one too, gives the reference join's rows.
func TestHashJoinCollectLeftSpills(t *testing.T) {
	leftRows, rightRows := jaSpillRows(3000, 400, 1), jaSpillRows(2000, 500, 2)
	types := []JoinType{JoinInner, JoinLeft, JoinRight, JoinFull, JoinLeftSemi, JoinLeftAnti, JoinRightSemi, JoinRightAnti}
	for _, jt := range types {
		for _, multi := range []bool{false, true} {
			for _, filter := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/multi=%v/filter=%v", jt, multi, filter), func(t *testing.T) {
					mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
					defer mem.AssertSize(t, 0)
					rp := 3
					if jt.EmitsUnmatchedBuild() {
						rp = 1
					}
					left := jaPartitioned(t, mem, jaLeftSchema, leftRows, 2, 50)
					defer left.release()
					right := jaPartitioned(t, mem, jaRightSchema, rightRows, rp, 70)
					defer right.release()
					lk := []expr.Expr{jaCol(0, "lk1", plan.Int64)}
					rk := []expr.Expr{jaCol(0, "rk1", plan.Int64)}
					if multi {
						lk = append(lk, jaCol(1, "lk2", plan.Utf8))
						rk = append(rk, jaCol(1, "rk2", plan.Utf8))
					}
					var f expr.Expr
					if filter {
						f = &jaCmp{L: 2, R: 5, Op: "<>"}
					}
					op, err := NewHashJoin(left, right, jt, lk, rk, f, false, JoinCollectLeft)
					if err != nil {
						t.Fatal(err)
					}
					limit := 10_000 + rand.Int64N(40_000)
					tc := jaTC(mem, 100, limit)
					tc.SpillDir = t.TempDir()
					spillCheck(t, tc, true, func() {
						got := jaCollect(t, op, tc)
						want := jaRefJoin(jt, leftRows, rightRows, jaKeyMatch(multi, filter))
						if !slices.Equal(got, want) {
							t.Fatalf("limit %d: got %d rows, want %d", limit, len(got), len(want))
						}
					})
				})
			}
		}
	}
}

// TestHashJoinNullAwareSpills: NOT IN's join spills, and still outputs
// nothing when a build key is NULL, and drops probe rows with a NULL key
// otherwise.
func TestHashJoinNullAwareSpills(t *testing.T) {
	schema := jaSchema("k", plan.Int64)
	var build, probe [][]any
	for i := range 4000 {
		build = append(build, []any{i * 3 % 5000})
	}
	for i := range 3000 {
		var k any = i * 7 % 6000
		if i%50 == 0 {
			k = nil
		}
		probe = append(probe, []any{k})
	}
	in := map[any]bool{}
	for _, r := range build {
		in[r[0]] = true
	}
	var want []string
	for _, r := range probe {
		if r[0] != nil && !in[r[0]] {
			want = append(want, jaRowString(r))
		}
	}
	slices.Sort(want)
	for _, withNull := range []bool{false, true} {
		t.Run(fmt.Sprintf("null-build-key=%v", withNull), func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			b := slices.Clone(build)
			if withNull {
				b = append(b, []any{nil})
			}
			left := jaPartitioned(t, mem, schema, b, 2, 64)
			defer left.release()
			right := jaPartitioned(t, mem, schema, probe, 3, 64)
			defer right.release()
			k := []expr.Expr{jaCol(0, "k", plan.Int64)}
			op, err := NewHashJoin(left, right, JoinRightAnti, k, k, nil, true, JoinCollectLeft)
			if err != nil {
				t.Fatal(err)
			}
			limit := 4_000 + rand.Int64N(12_000)
			tc := jaTC(mem, 100, limit)
			tc.SpillDir = t.TempDir()
			spillCheck(t, tc, true, func() {
				got := jaCollect(t, op, tc)
				w := want
				if withNull {
					w = nil
				}
				if !slices.Equal(got, w) {
					t.Fatalf("limit %d: got %d rows, want %d", limit, len(got), len(w))
				}
			})
		})
	}
}

// TestHashJoinSplitsBucketsAgain: under a limit far below a sixteenth of
// the build side, a bucket that does not fit is split again by other bits
// of the hash, as often as it takes, and the join is still right.
func TestHashJoinSplitsBucketsAgain(t *testing.T) {
	leftRows, rightRows := jaSpillRows(10_000, 5_000, 3), jaSpillRows(2_000, 5_000, 4)
	for _, jt := range []JoinType{JoinInner, JoinFull, JoinRightAnti} {
		t.Run(jt.String(), func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			left := jaPartitioned(t, mem, jaLeftSchema, leftRows, 1, 100)
			defer left.release()
			right := jaPartitioned(t, mem, jaRightSchema, rightRows, 1, 100)
			defer right.release()
			lk := []expr.Expr{jaCol(0, "lk1", plan.Int64)}
			rk := []expr.Expr{jaCol(0, "rk1", plan.Int64)}
			op, err := NewHashJoin(left, right, jt, lk, rk, nil, false, JoinPartitioned)
			if err != nil {
				t.Fatal(err)
			}
			// The build side takes about 500 KiB: a sixteenth of it does
			// not fit under these limits.
			limit := 6_000 + rand.Int64N(14_000)
			tc := jaTC(mem, 100, limit)
			tc.SpillDir = t.TempDir()
			before, _ := SpillStats()
			spillCheck(t, tc, true, func() {
				got := jaCollect(t, op, tc)
				want := jaRefJoin(jt, leftRows, rightRows, jaKeyMatch(false, false))
				if !slices.Equal(got, want) {
					t.Fatalf("limit %d: got %d rows, want %d", limit, len(got), len(want))
				}
			})
			if after, _ := SpillStats(); after-before <= 2*joinSpillBuckets {
				t.Errorf("%d spill files: no bucket was split again", after-before)
			}
		})
	}
}

// TestHashJoinOneKeyTooBig: a build side whose rows all share one key
// cannot be split; past the split levels the join fails with the memory
// error, leaving nothing behind.
func TestHashJoinOneKeyTooBig(t *testing.T) {
	var rows [][]any
	for i := range 5000 {
		rows = append(rows, []any{7, "s", i})
	}
	for _, mode := range []JoinMode{JoinPartitioned, JoinCollectLeft} {
		t.Run(mode.String(), func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			left := jaPartitioned(t, mem, jaLeftSchema, rows, 1, 100)
			defer left.release()
			right := jaPartitioned(t, mem, jaRightSchema, rows[:10], 1, 100)
			defer right.release()
			k := []expr.Expr{jaCol(0, "k", plan.Int64)}
			op, err := NewHashJoin(left, right, JoinInner, k, k, nil, false, mode)
			if err != nil {
				t.Fatal(err)
			}
			tc := jaTC(mem, 100, 20_000)
			tc.SpillDir = t.TempDir()
			spillCheck(t, tc, true, func() {
				_, err := jaRun(t, op, tc)
				if !errors.Is(err, mempool.ErrResourcesExhausted) || !strings.Contains(err.Error(), "one join key") {
					t.Fatalf("err = %v, want the memory limit naming one key", err)
				}
			})
		})
	}
}

// TestHashJoinSpillCancel: a spilling join cancelled while it splits or
// joins buckets closes every spill file.
func TestHashJoinSpillCancel(t *testing.T) {
	leftRows, rightRows := jaSpillRows(5000, 2000, 5), jaSpillRows(5000, 2000, 6)
	for _, mode := range []JoinMode{JoinPartitioned, JoinCollectLeft} {
		for _, after := range []int{0, 1, 5} {
			t.Run(fmt.Sprintf("%s/after=%d", mode, after), func(t *testing.T) {
				mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
				defer mem.AssertSize(t, 0)
				left := jaPartitioned(t, mem, jaLeftSchema, leftRows, 1, 50)
				defer left.release()
				right := jaPartitioned(t, mem, jaRightSchema, rightRows, 1, 50)
				defer right.release()
				k := []expr.Expr{jaCol(0, "k", plan.Int64)}
				op, err := NewHashJoin(left, right, JoinInner, k, k, nil, false, mode)
				if err != nil {
					t.Fatal(err)
				}
				tc := jaTC(mem, 100, 20_000)
				tc.SpillDir = t.TempDir()
				spillCheck(t, tc, after > 0, func() {
					ctx, cancel := context.WithCancel(context.Background())
					s, err := op.Execute(ctx, 0, tc)
					if err != nil {
						t.Fatal(err)
					}
					for range after {
						b, err := s.Next(ctx)
						if err != nil {
							t.Fatal(err)
						}
						b.Release()
					}
					cancel()
					if _, err := s.Next(ctx); !errors.Is(err, context.Canceled) {
						t.Errorf("after cancel: %v", err)
					}
					s.Close()
				})
			})
		}
	}
}

// TestHashJoinFairShare: the partitions of a task share its limit. A
// partition whose build side fits the limit alone, but not half of it,
// spills too while another partition's build side is spilling, rather
// than hold memory the other's buckets then lack.
func TestHashJoinFairShare(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	small, big := jaSpillRows(1500, 100_000, 7), jaSpillRows(3000, 100_000, 8)
	probe := jaSpillRows(500, 100_000, 9)
	src := func(parts ...[][]any) *jaSource {
		s := &jaSource{schema: jaLeftSchema, parts: make([][]arrow.RecordBatch, len(parts))}
		for p, rows := range parts {
			for i := 0; i < len(rows); i += 100 {
				s.parts[p] = append(s.parts[p], jaBatch(t, mem, jaLeftSchema, rows[i:min(len(rows), i+100)]))
			}
		}
		return s
	}
	k := []expr.Expr{jaCol(0, "k", plan.Int64)}
	// What the small build side needs alone.
	alone, probeAlone := src(small), src(probe)
	defer alone.release()
	defer probeAlone.release()
	op, err := NewHashJoin(alone, probeAlone, JoinInner, k, k, nil, false, JoinPartitioned)
	if err != nil {
		t.Fatal(err)
	}
	tc := jaTC(mem, 100, 0)
	jaCollect(t, op, tc)
	need := tc.Memory.Peak()

	left, right := src(small, big), src(probe, probe)
	defer left.release()
	defer right.release()
	op, err = NewHashJoin(left, right, JoinInner, k, k, nil, false, JoinPartitioned)
	if err != nil {
		t.Fatal(err)
	}
	// Limits from 1.1 to 1.4 times that: each partition's fair share
	// (half the limit, less what does not spill) is well under what the
	// small side needs. From about 1.58 times, it was not: the small side
	// fit (one run in 25 drew such a limit and failed).
	limit := need + need/10 + rand.Int64N(need*3/10)
	tc = jaTC(mem, 100, limit)
	tc.SpillDir = t.TempDir()
	before, _ := SpillStats()
	spillCheck(t, tc, true, func() {
		got := jaCollect(t, op, tc)
		// Partition i joins left part i with right part i.
		want := append(jaRefJoin(JoinInner, small, probe, jaKeyMatch(false, false)), jaRefJoin(JoinInner, big, probe, jaKeyMatch(false, false))...)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Fatalf("limit %d: got %d rows, want %d", limit, len(got), len(want))
		}
	})
	// Each partition that spills splits its build and probe rows into
	// joinSpillBuckets files each.
	if after, _ := SpillStats(); after-before < 4*joinSpillBuckets {
		t.Errorf("limit %d (the small side needs %d alone): %d spill files, want both partitions to spill", limit, need, after-before)
	}
}
