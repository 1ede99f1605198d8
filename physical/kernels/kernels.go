// Package kernels holds the batch kernels the operators share: gathering
// rows (take within one batch, interleave across batches), concatenating
// batches, turning a boolean mask into row indices, and sizing what a batch
// references, for memory reservations.
//
// Gathers are hand-written for the layouts sluice uses (fixed-width values of
// 4, 8 or 16 bytes, booleans, utf8, null) because they are on the hot path of
// Filter, Repartition and Sort; any other type falls back to Arrow's compute
// kernels.
package kernels

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/bits"
	"slices"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/decimal"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"sluice/physical/expr"
	"sluice/physical/mempool"
)

// RowRef names one row among a list of batches.
type RowRef struct {
	Batch int32
	Row   int32
}

// BatchBytes is the memory a batch's columns reference, used for
// reservations. A slice counts only its own rows' share of the buffers it
// shares with its parent: the bits of its validity bitmap, length×width of
// fixed-width values, and, for strings, its offsets and the range of the
// data buffer they point into. An operator that emits slices of one large
// result (a window's output cut into batches) would otherwise have each
// slice downstream charged for the whole result: a window over 35K rows in
// batches of 7 reserved 10 GiB for 2 MiB of data. The price is that a small
// slice which alone keeps a large buffer alive is charged for its share
// only; the operators here copy (take, interleave) rather than keep such
// slices for long. Layouts other than the ones sluice's types use are
// counted whole, erring on the safe side.
func BatchBytes(b arrow.RecordBatch) int64 {
	var n int64
	for _, col := range b.Columns() {
		n += ArrayBytes(col.Data())
	}
	return n
}

// ArrayBytes is BatchBytes for one column.
func ArrayBytes(d arrow.ArrayData) int64 {
	bufs := d.Buffers()
	off, n := int64(d.Offset()), int64(d.Len())
	switch dt := d.DataType().(type) {
	case *arrow.NullType:
		return 0
	case *arrow.StringType, *arrow.BinaryType:
		if len(bufs) == 3 && bufs[1] != nil {
			return bitmapBytes(bufs[0], off, n) + offsetsBytes[int32](bufs, off, n)
		}
	case *arrow.LargeStringType, *arrow.LargeBinaryType:
		if len(bufs) == 3 && bufs[1] != nil {
			return bitmapBytes(bufs[0], off, n) + offsetsBytes[int64](bufs, off, n)
		}
	case *arrow.DictionaryType, arrow.ExtensionType:
		// Their indices and dictionary (or storage) are counted whole.
	case arrow.FixedWidthDataType:
		if len(bufs) == 2 {
			return bitmapBytes(bufs[0], off, n) + bitRangeBytes(bufs[1], off, n, int64(dt.BitWidth()))
		}
	}
	return wholeArrayBytes(d)
}

// wholeArrayBytes counts every buffer of d, its children's and its
// dictionary's in full.
func wholeArrayBytes(d arrow.ArrayData) int64 {
	var n int64
	for _, buf := range d.Buffers() {
		if buf != nil {
			n += int64(buf.Len())
		}
	}
	for _, c := range d.Children() {
		n += wholeArrayBytes(c)
	}
	// Dictionary() of a non-dictionary array is a nil *Data in a non-nil
	// interface: ask only dictionary arrays.
	if _, ok := d.DataType().(*arrow.DictionaryType); ok {
		if dict := d.Dictionary(); dict != nil {
			n += wholeArrayBytes(dict)
		}
	}
	return n
}

// bitmapBytes is the bytes of a validity bitmap that rows [off, off+n)
// use (0 without a bitmap).
func bitmapBytes(buf *memory.Buffer, off, n int64) int64 {
	return bitRangeBytes(buf, off, n, 1)
}

// bitRangeBytes is the bytes of buf that n values of width bits from value
// off span, at most the buffer's length.
func bitRangeBytes(buf *memory.Buffer, off, n, width int64) int64 {
	if buf == nil || n == 0 {
		return 0
	}
	return min(((off+n)*width+7)/8-off*width/8, int64(buf.Len()))
}

// offsetsBytes is what rows [off, off+n) of a variable-width column
// reference: their n+1 offsets and the data between the first and the last.
func offsetsBytes[T int32 | int64](bufs []*memory.Buffer, off, n int64) int64 {
	if n == 0 {
		return 0
	}
	width := int64(unsafe.Sizeof(T(0)))
	offsets := unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(bufs[1].Bytes()))), int64(bufs[1].Len())/width)
	if int64(len(offsets)) < off+n+1 {
		return int64(bufs[1].Len()) + int64(bufLen(bufs[2]))
	}
	data := min(int64(offsets[off+n]-offsets[off]), int64(bufLen(bufs[2])))
	return (n+1)*width + max(data, 0)
}

func bufLen(b *memory.Buffer) int {
	if b == nil {
		return 0
	}
	return b.Len()
}

// ReleaseAll releases every non-nil array.
func ReleaseAll[T interface{ Release() }](xs []T) {
	for _, x := range xs {
		if any(x) != nil {
			x.Release()
		}
	}
}

// EvalAll evaluates exprs over batch; on error nothing is leaked.
func EvalAll(exprs []expr.Expr, batch arrow.RecordBatch, mem memory.Allocator) ([]arrow.Array, error) {
	out := make([]arrow.Array, len(exprs))
	for i, e := range exprs {
		a, err := e.Eval(batch, mem)
		if err != nil {
			ReleaseAll(out[:i])
			return nil, fmt.Errorf("evaluating %s: %w", e, err)
		}
		out[i] = a
	}
	return out, nil
}

// SelectRows returns batch's rows at idx, which must be ascending and
// distinct (a selection, as a filter or a hash split makes): batch itself,
// retained, when idx selects every row, else a new batch (takeBatch).
func SelectRows(mem memory.Allocator, batch arrow.RecordBatch, idx []int32) (arrow.RecordBatch, error) {
	if len(idx) == int(batch.NumRows()) {
		batch.Retain()
		return batch, nil
	}
	return takeBatch(mem, batch, idx)
}

// takeBatch returns a new batch holding batch's rows at idx, in that order.
func takeBatch(mem memory.Allocator, batch arrow.RecordBatch, idx []int32) (arrow.RecordBatch, error) {
	cols := make([]arrow.Array, batch.NumCols())
	for i, c := range batch.Columns() {
		a, err := TakeArray(mem, c, idx)
		if err != nil {
			ReleaseAll(cols[:i])
			return nil, err
		}
		cols[i] = a
	}
	out := array.NewRecordBatch(batch.Schema(), cols, int64(len(idx)))
	ReleaseAll(cols)
	return out, nil
}

// InterleaveBatches returns a new batch with schema holding the rows refs
// name, taken from batches.
func InterleaveBatches(mem memory.Allocator, schema *arrow.Schema, batches []arrow.RecordBatch, refs []RowRef) (arrow.RecordBatch, error) {
	if len(batches) > 2*len(refs)+8 {
		// A sort hands out a batch of rows at a time from all it holds:
		// 5,000 input batches of 7 rows made each 7-row output cost all
		// 5,000 sources per column, 96% of a 22 s query. Gather from the
		// batches refs name only.
		batches, refs = referencedBatches(batches, refs)
	}
	cols := make([]arrow.Array, len(schema.Fields()))
	srcs := make([]arrow.Array, len(batches))
	for i := range cols {
		for j, b := range batches {
			if b != nil {
				srcs[j] = b.Column(i)
			} else {
				srcs[j] = nil
			}
		}
		a, err := interleaveArrays(mem, schema.Field(i).Type, srcs, refs)
		if err != nil {
			ReleaseAll(cols[:i])
			return nil, err
		}
		cols[i] = a
	}
	out := array.NewRecordBatch(schema, cols, int64(len(refs)))
	ReleaseAll(cols)
	return out, nil
}

// referencedBatches returns the batches refs name, in order of first
// reference, and refs renumbered to index them.
func referencedBatches(batches []arrow.RecordBatch, refs []RowRef) ([]arrow.RecordBatch, []RowRef) {
	slot := make(map[int32]int32)
	var used []arrow.RecordBatch
	out := make([]RowRef, len(refs))
	for i, r := range refs {
		s, ok := slot[r.Batch]
		if !ok {
			s = int32(len(used))
			slot[r.Batch] = s
			used = append(used, batches[r.Batch])
		}
		out[i] = RowRef{s, r.Row}
	}
	return used, out
}

// ConcatBatches concatenates batches (all of schema) into one.
func ConcatBatches(mem memory.Allocator, schema *arrow.Schema, batches []arrow.RecordBatch) (arrow.RecordBatch, error) {
	if len(batches) == 1 {
		batches[0].Retain()
		return batches[0], nil
	}
	cols := make([]arrow.Array, len(schema.Fields()))
	parts := make([]arrow.Array, len(batches))
	var rows int64
	for _, b := range batches {
		rows += b.NumRows()
	}
	for i := range cols {
		for j, b := range batches {
			parts[j] = b.Column(i)
		}
		a, err := array.Concatenate(parts, mem)
		if err != nil {
			ReleaseAll(cols[:i])
			return nil, fmt.Errorf("concatenating batches: %w", err)
		}
		cols[i] = a
	}
	out := array.NewRecordBatch(schema, cols, rows)
	ReleaseAll(cols)
	return out, nil
}

// SelectionIndices returns the rows where mask is true (NULL counts as false).
func SelectionIndices(mask *array.Boolean, idx []int32) []int32 {
	idx = idx[:0]
	n := mask.Len()
	vals := mask.Data().Buffers()[1].Bytes()
	off := mask.Data().Offset()
	var valid []byte
	if mask.NullN() > 0 {
		valid = mask.NullBitmapBytes()
	}
	// Eight rows at a time (a NULL selects nothing, so the validity bits
	// are and-ed in): skip empty bytes, take full ones whole, and walk the
	// set bits of the rest.
	idx = slices.Grow(idx, n)
	full := n / 8
	for k := 0; k < full; k++ {
		v := bitsAt(vals, off+k*8)
		if valid != nil {
			v &= bitsAt(valid, off+k*8)
		}
		base := int32(k * 8)
		switch v {
		case 0:
		case 0xff:
			idx = append(idx, base, base+1, base+2, base+3, base+4, base+5, base+6, base+7)
		default:
			for v != 0 {
				idx = append(idx, base+int32(bits.TrailingZeros8(v)))
				v &= v - 1
			}
		}
	}
	for i := full * 8; i < n; i++ {
		if bitutil.BitIsSet(vals, off+i) && (valid == nil || bitutil.BitIsSet(valid, off+i)) {
			idx = append(idx, int32(i))
		}
	}
	return idx
}

// bitsAt returns the eight bits of bitmap bm that start at bit i, the
// first in the lowest bit; bits i to i+7 must lie inside bm.
func bitsAt(bm []byte, i int) byte {
	b, s := i/8, uint(i%8)
	if s == 0 {
		return bm[b]
	}
	return bm[b]>>s | bm[b+1]<<(8-s)
}

// fixedWidth returns the byte width of a fixed-width, non-boolean type, or 0.
func fixedWidth(dt arrow.DataType) int {
	fw, ok := dt.(arrow.FixedWidthDataType)
	if !ok || dt.ID() == arrow.BOOL {
		return 0
	}
	switch fw.BitWidth() {
	case 32:
		return 4
	case 64:
		return 8
	case 128:
		return 16
	}
	return 0
}

// TakeArray gathers arr's values at idx.
func TakeArray(mem memory.Allocator, arr arrow.Array, idx []int32) (arrow.Array, error) {
	dt := arr.DataType()
	switch fixedWidth(dt) {
	case 4:
		return takeFixed[int32](mem, arr, idx), nil
	case 8:
		return takeFixed[int64](mem, arr, idx), nil
	case 16:
		return takeFixed[decimal.Decimal128](mem, arr, idx), nil
	}
	switch a := arr.(type) {
	case *array.Boolean:
		return takeBool(mem, a, idx), nil
	case *array.String:
		return TakeString(mem, a, idx), nil
	case *array.Null:
		return array.NewNull(len(idx)), nil
	case *array.List:
		// arrow-go's take kernel for lists panics in a goroutine of its
		// own, out of reach of any recover.
		return expr.TakeList(mem, a, idx)
	}
	return takeGeneric(mem, arr, idx)
}

// takeGeneric gathers through Arrow's compute kernel, for rare types.
func takeGeneric(mem memory.Allocator, arr arrow.Array, idx []int32) (arrow.Array, error) {
	if l, ok := arr.(*array.List); ok {
		return expr.TakeList(mem, l, idx)
	}
	ib := array.NewInt32Builder(mem)
	ib.AppendValues(idx, nil)
	ia := ib.NewArray()
	ib.Release()
	defer ia.Release()
	out, err := compute.TakeArray(compute.WithAllocator(context.Background(), mem), arr, ia)
	if err != nil {
		return nil, fmt.Errorf("take on %s: %w", arr.DataType(), err)
	}
	return out, nil
}

// NewValidity allocates a validity bitmap for n values, all valid.
func NewValidity(mem memory.Allocator, n int) *memory.Buffer {
	buf := memory.NewResizableBuffer(mem)
	buf.Resize(int(bitutil.BytesForBits(int64(n))))
	bitutil.SetBitsTo(buf.Bytes(), 0, int64(n), true)
	return buf
}

func takeFixed[T int32 | int64 | decimal.Decimal128](mem memory.Allocator, arr arrow.Array, idx []int32) arrow.Array {
	n := len(idx)
	var zero T
	data := mempool.NewOutputBuffer(mem, n*sizeOf(zero))
	dst := arrow.GetData[T](data.Bytes())[:n]
	src := arrow.GetValues[T](arr.Data(), 1)
	for i, j := range idx {
		dst[i] = src[j]
	}
	var validity *memory.Buffer
	nulls := 0
	if arr.NullN() > 0 {
		validity = NewValidity(mem, n)
		vb := validity.Bytes()
		for i, j := range idx {
			if arr.IsNull(int(j)) {
				bitutil.ClearBit(vb, i)
				nulls++
			}
		}
	}
	return FinishArray(arr.DataType(), n, validity, data, nil, nulls)
}

func sizeOf(v any) int {
	switch v.(type) {
	case int32:
		return 4
	case int64:
		return 8
	}
	return 16
}

// FinishArray wraps freshly built buffers (ownership moves to the array).
func FinishArray(dt arrow.DataType, n int, validity, b1, b2 *memory.Buffer, nulls int) arrow.Array {
	bufs := []*memory.Buffer{validity, b1}
	if b2 != nil {
		bufs = append(bufs, b2)
	}
	d := array.NewData(dt, n, bufs, nil, nulls, 0)
	for _, b := range bufs {
		if b != nil {
			b.Release()
		}
	}
	a := array.MakeFromData(d)
	d.Release()
	return a
}

func takeBool(mem memory.Allocator, arr *array.Boolean, idx []int32) arrow.Array {
	n := len(idx)
	data := memory.NewResizableBuffer(mem)
	data.Resize(int(bitutil.BytesForBits(int64(n))))
	db := data.Bytes()
	clear(db)
	var validity *memory.Buffer
	nulls := 0
	if arr.NullN() > 0 {
		validity = NewValidity(mem, n)
	}
	for i, j := range idx {
		if validity != nil && arr.IsNull(int(j)) {
			bitutil.ClearBit(validity.Bytes(), i)
			nulls++
			continue
		}
		if arr.Value(int(j)) {
			bitutil.SetBit(db, i)
		}
	}
	return FinishArray(arr.DataType(), n, validity, data, nil, nulls)
}

// TakeString gathers the rows idx names; a negative index gives a NULL (the
// missing side of an outer join).
func TakeString(mem memory.Allocator, arr *array.String, idx []int32) arrow.Array {
	n := len(idx)
	srcOff := arr.ValueOffsets()
	var srcVals []byte
	if b := arr.Data().Buffers()[2]; b != nil {
		srcVals = b.Bytes()
	}
	if arr.Len() <= shortDictMax && n >= 4*arr.Len() {
		if out := takeShortStrings(mem, arr, srcOff, srcVals, idx); out != nil {
			return out
		}
	}
	total, missing := 0, 0
	for _, j := range idx {
		if j < 0 {
			missing++
			continue
		}
		total += int(srcOff[j+1] - srcOff[j])
	}
	offBuf := mempool.NewOutputBuffer(mem, (n+1)*4)
	offs := arrow.GetData[int32](offBuf.Bytes())[:n+1]
	// 16 bytes of slack for the word copies; never part of a value.
	valBuf := mempool.NewOutputBuffer(mem, total+16)
	vals := valBuf.Bytes()
	pos := int32(0)
	if missing == 0 {
		wordsEnd := int32(len(srcVals)) - 16 // a value starting at or before it can be read as two words
		for i, j := range idx {
			offs[i] = pos
			// Short values (names, codes, dates as text) are copied as two
			// 8-byte words, cheaper than a call to memmove; the bytes past
			// the value are overwritten by the next one or lie in the
			// slack.
			if b, e := srcOff[j], srcOff[j+1]; e-b <= 16 && b <= wordsEnd {
				w := srcVals[b : b+16]
				binary.LittleEndian.PutUint64(vals[pos:], binary.LittleEndian.Uint64(w))
				binary.LittleEndian.PutUint64(vals[pos+8:], binary.LittleEndian.Uint64(w[8:]))
				pos += e - b
			} else {
				pos += int32(copy(vals[pos:], srcVals[b:e]))
			}
		}
	} else {
		for i, j := range idx {
			offs[i] = pos
			if j >= 0 {
				pos += int32(copy(vals[pos:], srcVals[srcOff[j]:srcOff[j+1]]))
			}
		}
	}
	offs[n] = pos
	valBuf.ResizeNoShrink(total)
	var validity *memory.Buffer
	nulls := 0
	if arr.NullN() > 0 || missing > 0 {
		validity = NewValidity(mem, n)
		for i, j := range idx {
			if j < 0 || arr.IsNull(int(j)) {
				bitutil.ClearBit(validity.Bytes(), i)
				nulls++
			}
		}
	}
	return FinishArray(arr.DataType(), n, validity, offBuf, valBuf, nulls)
}

// shortDictMax is the largest source takeShortStrings handles: a Parquet
// dictionary (flags, modes, priorities), not a column of data.
const shortDictMax = 4096

// takeShortStrings is TakeString from a small source whose values are all
// at most 16 bytes long (decoding a dictionary of flags, codes or
// priorities, many rows per entry), or nil when the source is not like that
// or idx has a negative index. Each entry is read once into one or two
// words, and each row is one or two 8-byte stores of its entry's words into
// the output, which has 16 bytes of slack at its end.
func takeShortStrings(mem memory.Allocator, arr *array.String, srcOff []int32, srcVals []byte, idx []int32) arrow.Array {
	m := arr.Len()
	words, lens := make([][2]uint64, m), make([]int32, m)
	wide := false
	for e := 0; e < m; e++ {
		b, l := srcOff[e], srcOff[e+1]-srcOff[e]
		if l > 16 {
			return nil
		}
		wide = wide || l > 8
		var w [16]byte
		copy(w[:], srcVals[b:b+l])
		words[e] = [2]uint64{binary.LittleEndian.Uint64(w[:8]), binary.LittleEndian.Uint64(w[8:])}
		lens[e] = l
	}
	total := 0
	for _, j := range idx {
		if j < 0 {
			return nil
		}
		total += int(lens[j])
	}
	n := len(idx)
	offBuf := mempool.NewOutputBuffer(mem, (n+1)*4)
	offs := arrow.GetData[int32](offBuf.Bytes())[:n+1]
	// 16 bytes of slack for the word stores; never part of a value.
	valBuf := mempool.NewOutputBuffer(mem, total+16)
	vals := valBuf.Bytes()
	pos := int32(0)
	if wide {
		for i, j := range idx {
			offs[i] = pos
			binary.LittleEndian.PutUint64(vals[pos:], words[j][0])
			binary.LittleEndian.PutUint64(vals[pos+8:], words[j][1])
			pos += lens[j]
		}
	} else {
		for i, j := range idx {
			offs[i] = pos
			binary.LittleEndian.PutUint64(vals[pos:], words[j][0])
			pos += lens[j]
		}
	}
	offs[n] = pos
	valBuf.ResizeNoShrink(total)
	var validity *memory.Buffer
	nulls := 0
	if arr.NullN() > 0 {
		validity = NewValidity(mem, n)
		for i, j := range idx {
			if arr.IsNull(int(j)) {
				bitutil.ClearBit(validity.Bytes(), i)
				nulls++
			}
		}
	}
	return FinishArray(arr.DataType(), n, validity, offBuf, valBuf, nulls)
}

// interleaveArrays gathers the rows refs name from srcs (one array per
// batch; entries not referenced may be nil).
func interleaveArrays(mem memory.Allocator, dt arrow.DataType, srcs []arrow.Array, refs []RowRef) (arrow.Array, error) {
	switch fixedWidth(dt) {
	case 4:
		return interleaveFixed[int32](mem, dt, srcs, refs), nil
	case 8:
		return interleaveFixed[int64](mem, dt, srcs, refs), nil
	case 16:
		return interleaveFixed[decimal.Decimal128](mem, dt, srcs, refs), nil
	}
	switch dt.ID() {
	case arrow.BOOL:
		return interleaveBool(mem, dt, srcs, refs), nil
	case arrow.STRING:
		return interleaveString(mem, dt, srcs, refs), nil
	case arrow.NULL:
		return array.NewNull(len(refs)), nil
	}
	return interleaveGeneric(mem, srcs, refs)
}

// interleaveGeneric concatenates the sources and takes from the result; it
// is only used for types without a hand-written gather.
func interleaveGeneric(mem memory.Allocator, srcs []arrow.Array, refs []RowRef) (arrow.Array, error) {
	var parts []arrow.Array
	base := make([]int32, len(srcs))
	var total int32
	for i, s := range srcs {
		base[i] = total
		if s != nil {
			parts = append(parts, s)
			total += int32(s.Len())
		}
	}
	all, err := array.Concatenate(parts, mem)
	if err != nil {
		return nil, fmt.Errorf("interleave: %w", err)
	}
	defer all.Release()
	idx := make([]int32, len(refs))
	for i, r := range refs {
		idx[i] = base[r.Batch] + r.Row
	}
	return takeGeneric(mem, all, idx)
}

func interleaveValidity(mem memory.Allocator, srcs []arrow.Array, refs []RowRef) (*memory.Buffer, int) {
	hasNulls := false
	for _, s := range srcs {
		if s != nil && s.NullN() > 0 {
			hasNulls = true
			break
		}
	}
	if !hasNulls {
		return nil, 0
	}
	validity := NewValidity(mem, len(refs))
	vb := validity.Bytes()
	nulls := 0
	for i, r := range refs {
		if srcs[r.Batch].IsNull(int(r.Row)) {
			bitutil.ClearBit(vb, i)
			nulls++
		}
	}
	return validity, nulls
}

func interleaveFixed[T int32 | int64 | decimal.Decimal128](mem memory.Allocator, dt arrow.DataType, srcs []arrow.Array, refs []RowRef) arrow.Array {
	n := len(refs)
	vals := make([][]T, len(srcs))
	for i, s := range srcs {
		if s != nil {
			vals[i] = arrow.GetValues[T](s.Data(), 1)
		}
	}
	var zero T
	data := mempool.NewOutputBuffer(mem, n*sizeOf(zero))
	dst := arrow.GetData[T](data.Bytes())[:n]
	for i, r := range refs {
		dst[i] = vals[r.Batch][r.Row]
	}
	validity, nulls := interleaveValidity(mem, srcs, refs)
	return FinishArray(dt, n, validity, data, nil, nulls)
}

func interleaveBool(mem memory.Allocator, dt arrow.DataType, srcs []arrow.Array, refs []RowRef) arrow.Array {
	n := len(refs)
	data := memory.NewResizableBuffer(mem)
	data.Resize(int(bitutil.BytesForBits(int64(n))))
	db := data.Bytes()
	clear(db)
	for i, r := range refs {
		if srcs[r.Batch].(*array.Boolean).Value(int(r.Row)) {
			bitutil.SetBit(db, i)
		}
	}
	validity, nulls := interleaveValidity(mem, srcs, refs)
	return FinishArray(dt, n, validity, data, nil, nulls)
}

func interleaveString(mem memory.Allocator, dt arrow.DataType, srcs []arrow.Array, refs []RowRef) arrow.Array {
	n := len(refs)
	strs := make([]*array.String, len(srcs))
	for i, s := range srcs {
		if s != nil {
			strs[i] = s.(*array.String)
		}
	}
	total := 0
	for _, r := range refs {
		total += strs[r.Batch].ValueLen(int(r.Row))
	}
	offBuf := mempool.NewOutputBuffer(mem, (n+1)*4)
	offs := arrow.GetData[int32](offBuf.Bytes())[:n+1]
	valBuf := mempool.NewOutputBuffer(mem, total)
	vals := valBuf.Bytes()
	pos := int32(0)
	for i, r := range refs {
		offs[i] = pos
		pos += int32(copy(vals[pos:], strs[r.Batch].Value(int(r.Row))))
	}
	offs[n] = pos
	validity, nulls := interleaveValidity(mem, srcs, refs)
	return FinishArray(dt, n, validity, offBuf, valBuf, nulls)
}
