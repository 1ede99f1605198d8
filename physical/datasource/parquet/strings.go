package parquet

import (
	"fmt"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"sluice/physical/kernels"
	"sluice/physical/mempool"
)

// DecodeStringDictionary turns a dictionary<int, utf8> array into plain
// utf8: lengths are summed first, then offsets and bytes are written in one
// pass.
//
// sel, if not nil, lists the rows to decode. checked says the codes of the
// valid rows are known to index the dictionary (the scan's own reader
// checked them); else they are checked here.
func DecodeStringDictionary(mem memory.Allocator, d *array.Dictionary, sel []int32, checked bool) (arrow.Array, error) {
	dict, ok := d.Dictionary().(*array.String)
	if !ok {
		return nil, fmt.Errorf("dictionary of %s, want utf8", d.Dictionary().DataType())
	}
	var idx []int32
	switch ix := d.Indices().(type) {
	case *array.Int32:
		idx = ix.Int32Values()
	default:
		return nil, fmt.Errorf("dictionary indices of %s, want int32", d.Indices().DataType())
	}
	if d.NullN() == 0 && dict.NullN() == 0 {
		// The common case (a required column): unless the reader checked
		// the codes, one unsigned maximum checks them all; the selected
		// codes are gathered without a look at validity.
		if !checked {
			var top uint32
			for _, j := range idx {
				top = max(top, uint32(j))
			}
			if len(idx) > 0 && top >= uint32(dict.Len()) {
				return nil, fmt.Errorf("dictionary index %d out of range [0, %d)", int32(top), dict.Len())
			}
		}
		if out := oneByteStrings(mem, dict, idx, sel); out != nil {
			return out, nil
		}
		if sel == nil {
			return kernels.TakeString(mem, dict, idx), nil
		}
		codes := make([]int32, len(sel))
		for k, r := range sel {
			codes[k] = idx[r]
		}
		return kernels.TakeString(mem, dict, codes), nil
	}
	for i, j := range idx {
		if (int(j) < 0 || int(j) >= dict.Len()) && d.IsValid(i) {
			return nil, fmt.Errorf("dictionary index %d out of range [0, %d)", j, dict.Len())
		}
	}
	// Rare for a column written with a dictionary: mark NULL rows with a
	// negative index, which kernels.TakeString turns into NULL.
	rows := sel
	if rows == nil {
		rows = make([]int32, len(idx))
		for i := range rows {
			rows[i] = int32(i)
		}
	}
	codes := make([]int32, len(rows))
	for k, r := range rows {
		codes[k] = idx[r]
		if d.IsNull(int(r)) || dict.IsNull(int(codes[k])) {
			codes[k] = -1
		}
	}
	return kernels.TakeString(mem, dict, codes), nil
}

// oneByteStrings decodes the codes idx (of the rows sel, nil: all) of a
// NULL-free dictionary whose entries are all one byte long (TPC-H's flags
// and statuses), or returns nil for any other dictionary. Row i's value is
// byte i of the values, so the offsets are 0, 1, 2, …: a read-only
// sequence shared by every such array instead of written for each.
func oneByteStrings(mem memory.Allocator, dict *array.String, idx, sel []int32) arrow.Array {
	m := dict.Len()
	if m == 0 || m > 256 {
		return nil
	}
	offs := dict.ValueOffsets()
	var lut [256]byte
	vals := dict.ValueBytes()
	base := offs[0]
	for j := range m {
		if offs[j+1]-offs[j] != 1 {
			return nil
		}
		lut[j] = vals[offs[j]-base]
	}
	n := len(idx)
	if sel != nil {
		n = len(sel)
	}
	valBuf := mempool.NewOutputBuffer(mem, n)
	out := valBuf.Bytes()
	if sel == nil {
		for i, c := range idx {
			out[i] = lut[uint8(c)]
		}
	} else {
		for i, r := range sel {
			out[i] = lut[uint8(idx[r])]
		}
	}
	offBuf := memory.NewBufferBytes(arrow.Int32Traits.CastToBytes(identityOffsets(n + 1)))
	return kernels.FinishArray(arrow.BinaryTypes.String, n, nil, offBuf, valBuf, 0)
}

// identity holds 0, 1, 2, … (never written once published), grown on
// demand; identityOffsets hands out its first n values.
var identity atomic.Pointer[[]int32]

func identityOffsets(n int) []int32 {
	if p := identity.Load(); p != nil && len(*p) >= n {
		return (*p)[:n:n]
	}
	seq := make([]int32, max(n, 1<<16))
	for i := range seq {
		seq[i] = int32(i)
	}
	identity.Store(&seq)
	return seq[:n:n]
}
