package physical

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"sluice/physical/expr"
	"sluice/physical/mempool"
	"sluice/plan"
)

var windowSchema = arrow.NewSchema([]arrow.Field{
	{Name: "p", Type: plan.Int64, Nullable: true},
	{Name: "o", Type: plan.Int64, Nullable: true},
	{Name: "v", Type: plan.Int64, Nullable: true},
	{Name: "id", Type: plan.Int64},
}, nil)

var (
	wP  = &expr.Column{Index: 0, Name: "p", Type: plan.Int64}
	wO  = &expr.Column{Index: 1, Name: "o", Type: plan.Int64}
	wV  = &expr.Column{Index: 2, Name: "v", Type: plan.Int64}
	wID = &expr.Column{Index: 3, Name: "id", Type: plan.Int64}
)

// windowRows returns n random rows sorted by p (NULLs last), then o (ASC
// NULLS LAST, or DESC NULLS FIRST when desc), then id: few partitions and
// order values, so partitions span batches, batches hold several
// partitions and peers are common.
func windowRows(seed uint64, n int, desc bool) [][]any {
	rng := rand.New(rand.NewPCG(seed, 7))
	maybe := func(v int, nulls int) any {
		if rng.IntN(nulls) == 0 {
			return nil
		}
		return v
	}
	rows := make([][]any, n)
	for i := range rows {
		rows[i] = []any{maybe(rng.IntN(4), 8), maybe(rng.IntN(6)*2, 6), maybe(rng.IntN(100)-30, 5), i}
	}
	nullsLast := func(a, b any) int {
		switch {
		case a == nil && b == nil:
			return 0
		case a == nil:
			return 1
		case b == nil:
			return -1
		}
		return a.(int) - b.(int)
	}
	slices.SortFunc(rows, func(a, b []any) int {
		if c := nullsLast(a[0], b[0]); c != 0 {
			return c
		}
		c := nullsLast(a[1], b[1])
		if desc {
			c = -c
		}
		if c != 0 {
			return c
		}
		return a[3].(int) - b[3].(int)
	})
	return rows
}

// windowSource splits rows into batches of per rows, in one partition.
func windowSource(t testing.TB, mem memory.Allocator, rows [][]any, per int) *memSource {
	var batches []arrow.RecordBatch
	for s := 0; s < len(rows); s += per {
		cols := make([][]any, 4)
		for _, r := range rows[s:min(s+per, len(rows))] {
			for c := range cols {
				cols[c] = append(cols[c], r[c])
			}
		}
		batches = append(batches, makeBatch(t, mem, windowSchema, cols...))
	}
	return newMemSource(windowSchema, [][]arrow.RecordBatch{batches})
}

// refFrame computes row i's frame the slow way, from PostgreSQL's
// definitions (its frame head and tail loops): part holds the row indexes
// of i's partition in order, ORDER BY o ASC NULLS LAST, or DESC NULLS FIRST
// when desc.
func refFrame(rows [][]any, part []int, pos int, f plan.WindowFrame, desc bool) []int {
	cur := rows[part[pos]][1]
	peer := func(j int) bool { return fmt.Sprint(rows[part[j]][1]) == fmt.Sprint(cur) }
	// inRange reports whether key o lies between cur and cur+d in the
	// sort direction (d < 0: before cur); start bounds test o >= target,
	// end bounds o <= target, both in sort order.
	target := func(d int) int {
		if desc {
			return cur.(int) - d
		}
		return cur.(int) + d
	}
	atOrAfter := func(o, t int) bool { return (o >= t) != desc || o == t }
	atOrBefore := func(o, t int) bool { return (o <= t) != desc || o == t }
	startPos := func() int {
		switch f.Start.Kind {
		case plan.BoundUnboundedPreceding:
			return 0
		case plan.BoundCurrentRow:
			if f.Rows {
				return pos
			}
			j := pos
			for j > 0 && peer(j-1) {
				j--
			}
			return j
		}
		n := int(f.Start.Offset.Val.(int64))
		if f.Start.Kind == plan.BoundPreceding {
			n = -n
		}
		if f.Rows {
			return max(pos+n, 0)
		}
		// The head advances while it is before the range: past non-NULL
		// rows when cur is NULL (NULLs last), past NULLs when cur is not
		// (NULLs first), past keys before cur+n.
		for j := range part {
			o := rows[part[j]][1]
			switch {
			case cur == nil && o == nil:
				return j
			case cur == nil:
				continue
			case o == nil:
				if desc {
					continue
				}
				return j
			case atOrAfter(o.(int), target(n)):
				return j
			}
		}
		return len(part)
	}
	endPos := func() int { // one past the last row
		switch f.End.Kind {
		case plan.BoundUnboundedFollowing:
			return len(part)
		case plan.BoundCurrentRow:
			if f.Rows {
				return pos + 1
			}
			j := pos + 1
			for j < len(part) && peer(j) {
				j++
			}
			return j
		}
		n := int(f.End.Offset.Val.(int64))
		if f.End.Kind == plan.BoundPreceding {
			n = -n
		}
		if f.Rows {
			return min(max(pos+n+1, 0), len(part))
		}
		// The tail advances over NULLs when they sort first or cur is one
		// of them; when cur is NULL and NULLs sort last, over every key
		// (they all come before it); otherwise over keys up to cur+n.
		j := 0
		for ; j < len(part); j++ {
			o := rows[part[j]][1]
			if o == nil {
				if desc || cur == nil {
					continue
				}
				break
			}
			if cur == nil {
				if desc {
					break
				}
				continue
			}
			if !atOrBefore(o.(int), target(n)) {
				break
			}
		}
		return j
	}
	s, e := startPos(), endPos()
	var out []int
	for j := s; j < e; j++ {
		out = append(out, part[j])
	}
	return out
}

var windowFrameCases = []plan.WindowFrame{
	plan.DefaultFrame,
	{Rows: true, Start: plan.FrameBound{Kind: plan.BoundUnboundedPreceding}, End: plan.FrameBound{Kind: plan.BoundCurrentRow}},
	{Rows: true, Start: offsetBound(plan.BoundPreceding, 2), End: offsetBound(plan.BoundFollowing, 1)},
	{Rows: true, Start: offsetBound(plan.BoundFollowing, 1), End: offsetBound(plan.BoundFollowing, 3)},
	{Rows: true, Start: plan.FrameBound{Kind: plan.BoundCurrentRow}, End: plan.FrameBound{Kind: plan.BoundUnboundedFollowing}},
	{Rows: true, Start: offsetBound(plan.BoundPreceding, 3), End: offsetBound(plan.BoundPreceding, 1)},
	{Start: plan.FrameBound{Kind: plan.BoundCurrentRow}, End: plan.FrameBound{Kind: plan.BoundUnboundedFollowing}},
	{Start: offsetBound(plan.BoundPreceding, 2), End: offsetBound(plan.BoundFollowing, 4)},
	{Start: offsetBound(plan.BoundPreceding, 4), End: offsetBound(plan.BoundPreceding, 1)},
	{Start: offsetBound(plan.BoundFollowing, 1), End: plan.FrameBound{Kind: plan.BoundUnboundedFollowing}},
	{Start: plan.FrameBound{Kind: plan.BoundUnboundedPreceding}, End: plan.FrameBound{Kind: plan.BoundUnboundedFollowing}},
}

func offsetBound(k plan.BoundKind, n int64) plan.FrameBound {
	return plan.FrameBound{Kind: k, Offset: &plan.Literal{Typ: plan.Int64, Val: n}}
}

// TestWindowFrames checks aggregates and frame values over every kind of
// frame against refFrame, with batches smaller and larger than partitions.
func TestWindowFrames(t *testing.T) {
	for _, desc := range []bool{false, true} {
		for _, per := range []int{1, 7, 1000} {
			for fi, fr := range windowFrameCases {
				t.Run(fmt.Sprintf("desc=%v/batch=%d/%s", desc, per, fr), func(t *testing.T) {
					testWindowFrame(t, fr, uint64(fi+1), per, desc)
				})
			}
		}
	}
}

func testWindowFrame(t *testing.T, fr plan.WindowFrame, seed uint64, per int, desc bool) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rows := windowRows(seed, 300, desc)
	src := windowSource(t, mem, rows, per)
	defer src.release()
	funcs := []WindowExpr{
		{Func: plan.WinAggregate, Agg: plan.AggSum, Args: []expr.Expr{wV}, Frame: fr, Name: "sum", Type: plan.Int64},
		{Func: plan.WinAggregate, Agg: plan.AggCount, Args: []expr.Expr{wV}, Frame: fr, Name: "count", Type: plan.Int64},
		{Func: plan.WinAggregate, Agg: plan.AggCountStar, Frame: fr, Name: "rows", Type: plan.Int64},
		{Func: plan.WinAggregate, Agg: plan.AggMin, Args: []expr.Expr{wV}, Frame: fr, Name: "min", Type: plan.Int64},
		{Func: plan.WinAggregate, Agg: plan.AggMax, Args: []expr.Expr{wV}, Frame: fr, Name: "max", Type: plan.Int64},
		{Func: plan.WinFirstValue, Args: []expr.Expr{wID}, Frame: fr, Name: "first", Type: plan.Int64},
		{Func: plan.WinLastValue, Args: []expr.Expr{wID}, Frame: fr, Name: "last", Type: plan.Int64},
	}
	w, err := NewWindow(src, []expr.Expr{wP}, []SortKey{{Expr: wO, Desc: desc, NullsFirst: desc}}, funcs)
	if err != nil {
		t.Fatal(err)
	}
	tc := newTestTC(mem, 16)
	got := collectAll(t, w, tc)
	if tc.Memory.Used() != 0 {
		t.Errorf("%d bytes still reserved", tc.Memory.Used())
	}
	if len(got) != len(rows) {
		t.Fatalf("got %d rows, want %d", len(got), len(rows))
	}
	for i, g := range got {
		if g[3] != rows[i][3] {
			t.Fatalf("row %d: id %v, want %v (input order not kept)", i, g[3], rows[i][3])
		}
		part := partitionOf(rows, i)
		frame := refFrame(rows, part, slices.Index(part, i), fr, desc)
		want := refAggs(rows, frame)
		if fmt.Sprint(g[4:]) != fmt.Sprint(want) {
			t.Fatalf("row %d %v frame %v: got %v, want %v", i, rows[i], frame, g[4:], want)
		}
	}
}

// partitionOf returns the indexes of the rows with row i's p, in order.
func partitionOf(rows [][]any, i int) []int {
	var out []int
	for j, r := range rows {
		if fmt.Sprint(r[0]) == fmt.Sprint(rows[i][0]) {
			out = append(out, j)
		}
	}
	return out
}

// refAggs computes sum, count, count(*), min, max of v and first/last id.
func refAggs(rows [][]any, frame []int) []any {
	var sum, mn, mx, first, last any
	cnt := 0
	for _, j := range frame {
		if first == nil {
			first = rows[j][3]
		}
		last = rows[j][3]
		v := rows[j][2]
		if v == nil {
			continue
		}
		cnt++
		x := v.(int)
		if sum == nil {
			sum, mn, mx = x, x, x
			continue
		}
		sum = sum.(int) + x
		mn, mx = min(mn.(int), x), max(mx.(int), x)
	}
	return []any{sum, cnt, len(frame), mn, mx, first, last}
}

// TestWindowRanking checks the ranking functions and lag/lead against
// their definitions.
func TestWindowRanking(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rows := windowRows(99, 200, false)
	src := windowSource(t, mem, rows, 9)
	defer src.release()
	i64 := func(v int64) expr.Expr { return &expr.Literal{Value: plan.Literal{Typ: plan.Int64, Val: v}} }
	funcs := []WindowExpr{
		{Func: plan.WinRowNumber, Name: "rn", Type: plan.Int64},
		{Func: plan.WinRank, Name: "rank", Type: plan.Int64},
		{Func: plan.WinDenseRank, Name: "dense", Type: plan.Int64},
		{Func: plan.WinNtile, Args: []expr.Expr{i64(3)}, Name: "tile", Type: plan.Int64},
		{Func: plan.WinLag, Args: []expr.Expr{wID, i64(2), i64(-1)}, Name: "lag", Type: plan.Int64},
		{Func: plan.WinLead, Args: []expr.Expr{wID, i64(1), &expr.Literal{Value: plan.Literal{Typ: plan.Int64}}}, Name: "lead", Type: plan.Int64},
	}
	w, err := NewWindow(src, []expr.Expr{wP}, []SortKey{{Expr: wO}}, funcs)
	if err != nil {
		t.Fatal(err)
	}
	got := collectAll(t, w, newTestTC(mem, 32))
	for i, g := range got {
		part := partitionOf(rows, i)
		pos := slices.Index(part, i)
		rank, dense := 1, 1
		for j := 1; j <= pos; j++ {
			if fmt.Sprint(rows[part[j]][1]) != fmt.Sprint(rows[part[j-1]][1]) {
				rank, dense = j+1, dense+1
			}
		}
		n, per := len(part), len(part)/3
		rem := n % 3
		tile := 0
		for b, start := 1, 0; b <= 3; b++ {
			size := per
			if b <= rem {
				size++
			}
			if pos >= start && pos < start+size {
				tile = b
			}
			start += size
		}
		var lag, lead any = -1, nil
		if pos >= 2 {
			lag = rows[part[pos-2]][3]
		}
		if pos+1 < n {
			lead = rows[part[pos+1]][3]
		}
		want := []any{pos + 1, rank, dense, tile, lag, lead}
		if fmt.Sprint(g[4:]) != fmt.Sprint(want) {
			t.Fatalf("row %d %v: got %v, want %v", i, rows[i], g[4:], want)
		}
	}
}

// TestWindowEmptyInput: no rows in, no rows out.
func TestWindowEmptyInput(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	src := windowSource(t, mem, nil, 4)
	defer src.release()
	w, err := NewWindow(src, nil, nil, []WindowExpr{{Func: plan.WinRowNumber, Name: "rn", Type: plan.Int64}})
	if err != nil {
		t.Fatal(err)
	}
	if got := collectAll(t, w, newTestTC(mem, 8)); len(got) != 0 {
		t.Fatalf("got %d rows", len(got))
	}
}

// TestWindowMemoryLimit: a partition larger than the task's memory fails
// with mempool.ErrResourcesExhausted and leaves nothing reserved.
func TestWindowMemoryLimit(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	src := windowSource(t, mem, windowRows(5, 2000, false), 100)
	defer src.release()
	w, err := NewWindow(src, nil, nil, []WindowExpr{{Func: plan.WinAggregate, Agg: plan.AggCountStar, Frame: plan.DefaultFrame, Name: "n", Type: plan.Int64}})
	if err != nil {
		t.Fatal(err)
	}
	tc := newTestTC(mem, 64)
	tc.Memory = mempool.NewPool("tiny", 4000, nil)
	s, err := w.Execute(context.Background(), 0, tc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Next(context.Background()); !errors.Is(err, mempool.ErrResourcesExhausted) {
		t.Errorf("err = %v, want mempool.ErrResourcesExhausted", err)
	}
	s.Close()
	if tc.Memory.Used() != 0 {
		t.Errorf("reservation not freed: %d bytes", tc.Memory.Used())
	}
}

// TestWindowRejects: what the operator cannot compute fails at plan time.
func TestWindowRejects(t *testing.T) {
	src := windowSource(t, memory.DefaultAllocator, nil, 1)
	rangeOff := plan.WindowFrame{Start: offsetBound(plan.BoundPreceding, 1), End: plan.FrameBound{Kind: plan.BoundCurrentRow}}
	for _, tc := range []struct {
		name  string
		order []SortKey
		f     WindowExpr
	}{
		{"range offset without order", nil, WindowExpr{Func: plan.WinAggregate, Agg: plan.AggCountStar, Frame: rangeOff, Name: "n", Type: plan.Int64}},
		{"range offset with two keys", []SortKey{{Expr: wO}, {Expr: wID}}, WindowExpr{Func: plan.WinAggregate, Agg: plan.AggCountStar, Frame: rangeOff, Name: "n", Type: plan.Int64}},
		{"wrong result type", nil, WindowExpr{Func: plan.WinRowNumber, Name: "rn", Type: plan.Int32}},
		{"negative rows offset", nil, WindowExpr{Func: plan.WinAggregate, Agg: plan.AggCountStar, Name: "n", Type: plan.Int64,
			Frame: plan.WindowFrame{Rows: true, Start: offsetBound(plan.BoundPreceding, -1), End: plan.FrameBound{Kind: plan.BoundCurrentRow}}}},
		{"missing argument", nil, WindowExpr{Func: plan.WinLag, Args: []expr.Expr{wV}, Name: "lag", Type: plan.Int64}},
	} {
		if _, err := NewWindow(src, nil, tc.order, []WindowExpr{tc.f}); err == nil {
			t.Errorf("%s: no error", tc.name)
		}
	}
}
