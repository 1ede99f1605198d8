package physical

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TestHashRowsStrings: equal strings hash equally wherever they sit in
// their arrays' buffers (the short-string word load and its byte-by-byte
// fallback at a buffer's end agree), and strings that differ only in
// length or in one byte hash differently.
func TestHashRowsStrings(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	words := []string{"", "A", "N", "AB", "MAIL", "REG AIR", "12345678", "123456789", "a\x00", "a", "a longer string than eight"}
	hashOf := func(a arrow.Array) []uint64 {
		h := make([]uint64, a.Len())
		if err := HashRows([]arrow.Array{a}, h); err != nil {
			t.Fatal(err)
		}
		return h
	}
	// Each word alone in its array (the word sits at the buffer's end)
	// and all together, followed by padding (the word load).
	all := stringArray(mem, append(append([]string{}, words...), "padding-padding")...)
	defer all.Release()
	together := hashOf(all)
	seen := map[uint64]string{}
	for i, w := range words {
		one := stringArray(mem, w)
		alone := hashOf(one)[0]
		one.Release()
		if alone != together[i] {
			t.Errorf("%q: hash %x alone, %x inside a longer buffer", w, alone, together[i])
		}
		if other, ok := seen[alone]; ok {
			t.Errorf("%q and %q hash alike", w, other)
		}
		seen[alone] = w
	}
	// A sliced array hashes its values, not its position.
	sl := array.NewSlice(all, 3, 6)
	defer sl.Release()
	for i, h := range hashOf(sl) {
		if h != together[3+i] {
			t.Errorf("slice row %d: %x, want %x", i, h, together[3+i])
		}
	}
}

// stringArray builds a string array of vals.
func stringArray(mem memory.Allocator, vals ...string) arrow.Array {
	b := array.NewStringBuilder(mem)
	defer b.Release()
	b.AppendValues(vals, nil)
	return b.NewArray()
}
