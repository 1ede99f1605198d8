package kernels

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"sluice/physical/internal/testutil"
	"sluice/plan"
)

// utilSchema covers every layout the hand-written gathers handle, plus int16
// and interval for the generic fallbacks.
var utilSchema = arrow.NewSchema([]arrow.Field{
	{Name: "i32", Type: plan.Int32, Nullable: true},
	{Name: "i64", Type: plan.Int64, Nullable: true},
	{Name: "f", Type: plan.Float64, Nullable: true},
	{Name: "d", Type: plan.Decimal(20, 3), Nullable: true},
	{Name: "dt", Type: plan.Date32, Nullable: true},
	{Name: "ts", Type: plan.Timestamp, Nullable: true},
	{Name: "s", Type: plan.Utf8, Nullable: true},
	{Name: "b", Type: plan.Bool, Nullable: true},
	{Name: "i16", Type: arrow.PrimitiveTypes.Int16, Nullable: true},
	{Name: "n", Type: arrow.Null, Nullable: true},
}, nil)

// utilBatch builds a 10-row batch; row i's values derive from i+base, with
// NULLs on rows 3 and 7.
func utilBatch(t testing.TB, mem memory.Allocator, base int) arrow.RecordBatch {
	arrs := make([]arrow.Array, len(utilSchema.Fields()))
	cols := make([][]any, 8)
	for r := 0; r < 10; r++ {
		v := r + base
		row := []any{v, v * 10, float64(v) / 2, v * 100, v + 19000, v * 1000, fmt.Sprintf("s%d", v), v%2 == 0}
		for c, x := range row {
			if r == 3 || r == 7 {
				x = nil
			}
			cols[c] = append(cols[c], x)
		}
	}
	b := testutil.MakeBatch(t, mem, arrow.NewSchema(utilSchema.Fields()[:8], nil), cols...)
	copy(arrs, b.Columns())
	for _, a := range arrs[:8] {
		a.Retain()
	}
	b.Release()
	ib := array.NewInt16Builder(mem)
	for r := 0; r < 10; r++ {
		if r == 3 || r == 7 {
			ib.AppendNull()
		} else {
			ib.Append(int16(r + base))
		}
	}
	arrs[8] = ib.NewArray()
	ib.Release()
	arrs[9] = array.NewNull(10)
	out := array.NewRecordBatch(utilSchema, arrs, 10)
	ReleaseAll(arrs)
	return out
}

func TestTakeBatch(t *testing.T) {
	tests := []struct {
		name       string
		start, end int64 // slice of the source batch
		idx        []int32
	}{
		{"whole", 0, 10, []int32{9, 0, 3, 3, 7, 5}},
		{"sliced", 2, 9, []int32{0, 1, 5, 6, 2}},
		{"empty", 0, 10, []int32{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			full := utilBatch(t, mem, 0)
			src := full.NewSlice(tt.start, tt.end)
			full.Release()
			got, err := takeBatch(mem, src, tt.idx)
			if err != nil {
				t.Fatal(err)
			}
			srcRows := testutil.BatchRows(src)
			var want [][]any
			for _, i := range tt.idx {
				want = append(want, srcRows[i])
			}
			if g, w := testutil.RowsString(testutil.BatchRows(got)), testutil.RowsString(want); g != w {
				t.Errorf("got\n%s\nwant\n%s", g, w)
			}
			got.Release()
			src.Release()
			mem.AssertSize(t, 0)
		})
	}
}

func TestInterleaveAndConcat(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	a, b := utilBatch(t, mem, 0), utilBatch(t, mem, 100)
	bs := b.NewSlice(1, 10)
	b.Release()
	batches := []arrow.RecordBatch{a, nil, bs}
	refs := []RowRef{{2, 0}, {0, 9}, {0, 3}, {2, 6}, {2, 8}, {0, 0}}
	got, err := InterleaveBatches(mem, utilSchema, batches, refs)
	if err != nil {
		t.Fatal(err)
	}
	rows := [][][]any{testutil.BatchRows(a), nil, testutil.BatchRows(bs)}
	var want [][]any
	for _, r := range refs {
		want = append(want, rows[r.Batch][r.Row])
	}
	if g, w := testutil.RowsString(testutil.BatchRows(got)), testutil.RowsString(want); g != w {
		t.Errorf("interleave got\n%s\nwant\n%s", g, w)
	}
	got.Release()

	cat, err := ConcatBatches(mem, utilSchema, []arrow.RecordBatch{a, bs})
	if err != nil {
		t.Fatal(err)
	}
	if g, w := testutil.RowsString(testutil.BatchRows(cat)), testutil.RowsString(append(rows[0], rows[2]...)); g != w {
		t.Errorf("concat got\n%s\nwant\n%s", g, w)
	}
	cat.Release()
	a.Release()
	bs.Release()
	mem.AssertSize(t, 0)
}

func TestSelectionIndices(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	bb := array.NewBooleanBuilder(mem)
	bb.AppendValues([]bool{true, false, true, true, false, true, true, true, false, true}, []bool{true, true, false, true, true, true, true, true, true, true})
	mask := bb.NewBooleanArray()
	bb.Release()
	if got := fmt.Sprint(SelectionIndices(mask, nil)); got != "[0 3 5 6 7 9]" {
		t.Errorf("got %s", got)
	}
	sl := array.NewSlice(mask, 2, 9).(*array.Boolean)
	if got := fmt.Sprint(SelectionIndices(sl, nil)); got != "[1 3 4 5]" {
		t.Errorf("sliced got %s", got)
	}
	sl.Release()
	mask.Release()

	// The byte-at-a-time path, with empty, full and mixed bytes, a ragged
	// tail, with and without NULLs, whole and sliced at every bit offset,
	// against a bit-by-bit reference.
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{1, 7, 8, 9, 64, 1000, 8193} {
		for _, withNulls := range []bool{false, true} {
			vals := make([]bool, n)
			ok := make([]bool, n)
			for i := range vals {
				switch (i / 24) % 3 {
				case 0:
					vals[i] = false
				case 1:
					vals[i] = true
				default:
					vals[i] = rng.IntN(2) == 0
				}
				ok[i] = !withNulls || (i/40)%3 == 1 || rng.IntN(4) != 0
			}
			bb := array.NewBooleanBuilder(mem)
			bb.AppendValues(vals, ok)
			m := bb.NewBooleanArray()
			bb.Release()
			for from := range min(n, 9) {
				sl := array.NewSlice(m, int64(from), int64(n)).(*array.Boolean)
				var want []int32
				for i := from; i < n; i++ {
					if vals[i] && ok[i] {
						want = append(want, int32(i-from))
					}
				}
				if got := SelectionIndices(sl, []int32{42}); fmt.Sprint(got) != fmt.Sprint(want) && !(len(got) == 0 && len(want) == 0) {
					t.Errorf("n=%d nulls=%v from=%d: got %v, want %v", n, withNulls, from, got, want)
				}
				sl.Release()
			}
			m.Release()
		}
	}
	mem.AssertSize(t, 0)
}

// TestTakeShortStrings gathers many rows from small string sources (the
// dictionary decode path: entries of 0 to 16 bytes, NULL entries, a sliced
// source) and from sources the short path must leave to the general one
// (an entry over 16 bytes, a missing row), and checks every value.
func TestTakeShortStrings(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rng := rand.New(rand.NewPCG(5, 6))
	cases := []struct {
		name    string
		entries []string
		valid   []bool
		slice   int
		missing bool
	}{
		{"flags", []string{"A", "N", "R"}, nil, 0, false},
		{"modes with NULL and empty", []string{"REG AIR", "", "MAIL", "TRUCK", "12345678"}, []bool{true, true, false, true, true}, 0, false},
		{"sliced source", []string{"x", "yy", "zzz", "wwww", "v"}, nil, 2, false},
		{"priorities up to 16 bytes", []string{"1-URGENT", "2-HIGH", "4-NOT SPECIFIED", "", "0123456789abcdef"}, []bool{true, true, true, false, true}, 0, false},
		{"long entry", []string{"A", "0123456789abcdefg"}, nil, 0, false},
		{"missing rows", []string{"A", "B"}, nil, 0, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := array.NewStringBuilder(mem)
			b.AppendValues(tc.entries, tc.valid)
			full := b.NewStringArray()
			b.Release()
			src := array.NewSlice(full, int64(tc.slice), int64(len(tc.entries))).(*array.String)
			full.Release()
			idx := make([]int32, 1000)
			for i := range idx {
				idx[i] = int32(rng.IntN(src.Len()))
				if tc.missing && i%97 == 3 {
					idx[i] = -1
				}
			}
			got := TakeString(mem, src, idx).(*array.String)
			for i, j := range idx {
				switch {
				case j < 0 || src.IsNull(int(j)):
					if !got.IsNull(i) {
						t.Fatalf("row %d: %q, want NULL", i, got.Value(i))
					}
				case got.IsNull(i) || got.Value(i) != src.Value(int(j)):
					t.Fatalf("row %d: %q (null %v), want %q", i, got.Value(i), got.IsNull(i), src.Value(int(j)))
				}
			}
			if last := got.ValueOffsets()[got.Len()]; int(last) != got.Data().Buffers()[2].Len() {
				t.Errorf("data buffer length %d, last offset %d", got.Data().Buffers()[2].Len(), last)
			}
			got.Release()
			src.Release()
		})
	}
}

func BenchmarkSelectionIndices(b *testing.B) {
	for _, pct := range []int{2, 10, 25, 50, 90} {
		rng := rand.New(rand.NewPCG(3, 4))
		bb := array.NewBooleanBuilder(memory.DefaultAllocator)
		for range 8192 {
			bb.Append(rng.IntN(100) < pct)
		}
		m := bb.NewBooleanArray()
		bb.Release()
		b.Run(fmt.Sprintf("%d%%", pct), func(b *testing.B) {
			var idx []int32
			for b.Loop() {
				idx = SelectionIndices(m, idx)
			}
		})
		m.Release()
	}
}

// TestTakeStringGeneral covers TakeString's general path (a source too
// large for takeShortStrings): values of every length from empty to past
// the two-word copy, the source's last values (too near the end of its
// buffer for a 16-byte read), a sliced source, and the output buffer
// ending at the last offset.
func TestTakeStringGeneral(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rng := rand.New(rand.NewPCG(5, 6))
	entries := make([]string, 3000)
	for i := range entries {
		entries[i] = strings.Repeat(string(rune('a'+i%26)), i%41)
	}
	b := array.NewStringBuilder(mem)
	b.AppendValues(entries, nil)
	full := b.NewStringArray()
	b.Release()
	defer full.Release()
	for _, off := range []int{0, 7} {
		src := array.NewSlice(full, int64(off), int64(len(entries))).(*array.String)
		idx := make([]int32, 500)
		for i := range idx {
			idx[i] = int32(rng.IntN(src.Len()))
		}
		idx[0], idx[1], idx[2] = int32(src.Len()-1), int32(src.Len()-2), int32(src.Len()-1) // the buffer's tail
		got := TakeString(mem, src, idx).(*array.String)
		for i, j := range idx {
			if got.Value(i) != src.Value(int(j)) {
				t.Fatalf("slice %d row %d: %q, want %q", off, i, got.Value(i), src.Value(int(j)))
			}
		}
		if last := got.ValueOffsets()[got.Len()]; int(last) != got.Data().Buffers()[2].Len() {
			t.Errorf("data buffer length %d, last offset %d", got.Data().Buffers()[2].Len(), last)
		}
		got.Release()
		src.Release()
	}
}

// randomBytesBatch builds an n-row batch over utilSchema's types with
// random values, NULLs at rate nullRate and strings of 0 to maxStr bytes.
func randomBytesBatch(t testing.TB, mem memory.Allocator, r *rand.Rand, n int, nullRate float64, maxStr int) arrow.RecordBatch {
	schema := arrow.NewSchema(utilSchema.Fields()[:8], nil)
	cols := make([][]any, 8)
	for i := 0; i < n; i++ {
		row := []any{r.Int32(), r.Int64(), r.Float64(), r.IntN(1 << 30), r.IntN(20000), r.Int64(), strings.Repeat("x", r.IntN(maxStr+1)), r.IntN(2) == 0}
		for c, v := range row {
			if r.Float64() < nullRate {
				v = nil
			}
			cols[c] = append(cols[c], v)
		}
	}
	b := testutil.MakeBatch(t, mem, schema, cols...)
	// Add a NULL-typed column: it references no memory.
	arrs := append(append([]arrow.Array(nil), b.Columns()...), array.NewNull(n))
	out := array.NewRecordBatch(arrow.NewSchema(append(schema.Fields(), arrow.Field{Name: "n", Type: arrow.Null, Nullable: true}), nil), arrs, int64(n))
	arrs[len(arrs)-1].Release()
	b.Release()
	return out
}

// TestBatchBytesSlices checks, on random batches and random cuts, that a
// slice is charged what a compact copy of its rows takes (give or take a
// byte of bitmap per column and the copy's dropped validity bitmap), and
// that the slices of a batch together are charged about the batch once,
// not once each.
func TestBatchBytesSlices(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 7))
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	for iter := 0; iter < 200; iter++ {
		n := r.IntN(3000)
		nullRate := []float64{0, 0.1, 0.5, 1}[r.IntN(4)]
		b := randomBytesBatch(t, mem, r, n, nullRate, r.IntN(60))
		whole := BatchBytes(b)
		ncols := int64(b.NumCols())
		// Cut b into consecutive slices of random lengths.
		var sum, slices int64
		for off := 0; off < n; {
			end := min(n, off+1+r.IntN(max(n/4, 8)))
			s := b.NewSlice(int64(off), int64(end))
			got := BatchBytes(s)
			idx := make([]int32, end-off)
			for i := range idx {
				idx[i] = int32(i)
			}
			cp, err := takeBatch(mem, s, idx)
			if err != nil {
				t.Fatal(err)
			}
			// The copy may drop a bitmap the slice still shares.
			want := BatchBytes(cp)
			rows := int64(end - off)
			if got < want-ncols || got > want+ncols*(rows/8+2) {
				t.Fatalf("seed %d: slice [%d, %d) of %d rows (null rate %v) charged %d bytes, a copy of it takes %d", seed, off, end, n, nullRate, got, want)
			}
			cp.Release()
			s.Release()
			sum += got
			slices++
			off = end
		}
		// Each slice may round its bitmaps and boolean values up to a
		// byte and add one string offset.
		if sum > whole+slices*(2*ncols+4) {
			t.Fatalf("seed %d: %d slices of a %d-row batch charged %d bytes together, the batch %d", seed, slices, n, sum, whole)
		}
		b.Release()
	}
	mem.AssertSize(t, 0)
}

// TestBatchBytesSmallSlices is the case that made slice-aware accounting
// necessary: a window's 35K-row result cut into 7-row batches was charged
// 5,000 times its size downstream.
func TestBatchBytesSmallSlices(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	r := rand.New(rand.NewPCG(412, 1))
	b := randomBytesBatch(t, mem, r, 35000, 0.1, 12)
	defer b.Release()
	whole := BatchBytes(b)
	var sum int64
	for off := int64(0); off < b.NumRows(); off += 7 {
		s := b.NewSlice(off, min(off+7, b.NumRows()))
		sum += BatchBytes(s)
		s.Release()
	}
	if sum > whole*3/2 {
		t.Errorf("7-row slices charged %d bytes together, the whole batch %d", sum, whole)
	}
}

// TestBatchBytesLayouts checks the count of each layout on a slice.
func TestBatchBytesLayouts(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	b := utilBatch(t, mem, 0) // 10 rows, NULLs on rows 3 and 7
	defer b.Release()
	s := b.NewSlice(2, 6) // rows 2..5: values "s2", "s4", "s5", NULL at 3
	defer s.Release()
	// One bitmap byte per column with NULLs, then the values: 4 int32, 4
	// int64, 4 float64, 4 decimal128, 4 date32, 4 timestamp, 5 offsets and
	// 6 string bytes, 1 byte of booleans, 4 int16, nothing for NULL.
	want := int64(9 + 4*4 + 4*8 + 4*8 + 4*16 + 4*4 + 4*8 + 5*4 + 6 + 1 + 4*2)
	if got := BatchBytes(s); got != want {
		t.Errorf("BatchBytes of rows 2..5 = %d, want %d", got, want)
	}
	empty := b.NewSlice(4, 4)
	defer empty.Release()
	if got := BatchBytes(empty); got != 0 {
		t.Errorf("an empty slice is charged %d bytes", got)
	}
}

// TestInterleaveFromManyBatches: rows gathered from a random number of
// batches, few or many against the rows (a sort's output batch out of
// thousands of small inputs), come out right on either side of the
// threshold at which only the referenced batches are gathered from.
func TestInterleaveFromManyBatches(t *testing.T) {
	seed := rand.Uint64()
	r := rand.New(rand.NewPCG(seed, 11))
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	batches := make([]arrow.RecordBatch, 300)
	rows := make([][][]any, len(batches))
	for i := range batches {
		if i%7 == 3 {
			continue // a released slot, as a top-K sort leaves
		}
		batches[i] = utilBatch(t, mem, 10*i)
		rows[i] = testutil.BatchRows(batches[i])
	}
	for range 200 {
		m := 4 + r.IntN(len(batches)-4) // sources passed: batches[:m]
		refs := make([]RowRef, 1+r.IntN(40))
		for j := range refs {
			b := r.IntN(m)
			for batches[b] == nil {
				b = r.IntN(m)
			}
			refs[j] = RowRef{int32(b), int32(r.IntN(10))}
		}
		got, err := InterleaveBatches(mem, utilSchema, batches[:m], refs)
		if err != nil {
			t.Fatal(err)
		}
		var want [][]any
		for _, ref := range refs {
			want = append(want, rows[ref.Batch][ref.Row])
		}
		if g, w := testutil.RowsString(testutil.BatchRows(got)), testutil.RowsString(want); g != w {
			t.Fatalf("seed %d: refs %v gave\n%s\nwant\n%s", seed, refs, g, w)
		}
		got.Release()
	}
	ReleaseAll(batches)
	mem.AssertSize(t, 0)
}

// TestBatchBytesOfAList sizes a batch holding an array column (VARCHAR[],
// regexp_match's type), which is counted whole: its offsets, validity and
// element strings.
func TestBatchBytesOfAList(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	lb := array.NewListBuilder(mem, arrow.BinaryTypes.String)
	vb := lb.ValueBuilder().(*array.StringBuilder)
	for i := range 100 {
		lb.Append(true)
		vb.Append(strings.Repeat("x", i))
		vb.AppendNull()
	}
	l := lb.NewArray()
	lb.Release()
	defer l.Release()
	b := array.NewRecordBatch(arrow.NewSchema([]arrow.Field{{Name: "m", Type: l.DataType(), Nullable: true}}, nil), []arrow.Array{l}, int64(l.Len()))
	defer b.Release()
	if got := BatchBytes(b); got < 4950 {
		t.Fatalf("BatchBytes %d, want at least the 4950 bytes of its strings", got)
	}
}
